"""Ctrl-C and SIGTERM, handled alike: the run stops, finished samples are kept.

SIGTERM is what ``timeout``, CI runners and systemd send. kbench turns it into
``Terminated``, a KeyboardInterrupt, so every place that keeps samples on Ctrl-C keeps
them on SIGTERM too; the exit status tells them apart (130 for SIGINT, 143 for SIGTERM).
``deferred()`` holds both signals back while a run's results are being stored, so an
interrupt cannot land in the middle of that transaction.

The first interrupt asks the run to stop and keep what it measured; fetching that may take
a moment (a guest's samples). ``keep_first()`` lets such a fetch absorb the first interrupt
(it is noted, the fetch goes on); a second one is never ignored: it is raised at once,
and whoever waits on something that may not answer (a guest) stops waiting.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

EXIT_SIGINT = 128 + signal.SIGINT
EXIT_SIGTERM = 128 + signal.SIGTERM


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived; handled exactly like Ctrl-C."""


_deferring = 0
_pending: int | None = None
_received: int | None = None
_count = 0
_keeping: list[Kept] = []


class Kept:
    """What a ``keep_first`` block absorbed: ``signum`` of the first interrupt, or None."""

    def __init__(self) -> None:
        self.signum: int | None = None

    @property
    def stopped(self) -> bool:
        return self.signum is not None


def _handler(signum: int, _frame: FrameType | None) -> None:
    global _pending, _received, _count
    _received = signum if _received is None or signum == signal.SIGTERM else _received
    _count += 1
    if _keeping and _count == 1:
        _keeping[-1].signum = signum
        return
    if _deferring:
        _pending = signum
        return
    _raise(signum)


def _raise(signum: int) -> None:
    if signum == signal.SIGTERM:
        raise Terminated()
    raise KeyboardInterrupt()


def install() -> None:
    """Route SIGINT and SIGTERM through kbench's handler (main thread only), with no
    interrupt received yet."""
    global _pending, _received, _count
    if threading.current_thread() is not threading.main_thread():
        return
    _pending, _received, _count = None, None, 0
    signal.signal(signal.SIGINT, _handler)
    signal.signal(signal.SIGTERM, _handler)


def received() -> int | None:
    """The signal that interrupted kbench (SIGTERM wins over SIGINT), or None."""
    return _received


def interruption() -> KeyboardInterrupt:
    """The exception that stands for the interrupt received (Terminated for SIGTERM), to
    raise when what an interrupted operation went on to fetch could not be had."""
    return Terminated() if _received == signal.SIGTERM else KeyboardInterrupt()


def count() -> int:
    """How many interrupts this process has received (a second one means: stop now)."""
    return _count


@contextmanager
def keep_first() -> Iterator[Kept]:
    """Inside the block, the process's first interrupt is noted in the ``Kept`` given, not
    raised (the block finishes its work); any later one is raised as usual."""
    kept = Kept()
    _keeping.append(kept)
    try:
        yield kept
    finally:
        _keeping.remove(kept)


def exit_status(exc: BaseException | None = None) -> int:
    """130 for Ctrl-C, 143 for SIGTERM."""
    if isinstance(exc, Terminated) or _received == signal.SIGTERM:
        return EXIT_SIGTERM
    return EXIT_SIGINT


def note(signum: int) -> None:
    """Record that ``signum`` stopped the run, when it reached a child rather than kbench."""
    global _received
    if _received is None:
        _received = signum


@contextmanager
def deferred() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back inside the block; one that arrived is raised on leaving."""
    global _deferring, _pending
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
        if not _deferring and _pending is not None:
            signum, _pending = _pending, None
            _raise(signum)
