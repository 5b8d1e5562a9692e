"""Progress of long work on stderr: what is being done, steps done and left, time spent.

    with LongWork("bisecting", unit="steps", quiet=quiet or as_json) as work:
        session.run(..., progress=work)          # work(what, done, total) as it goes

One line, redrawn in place: a spinner, what is being done, a bar, ``3/8 steps, 5 left``
(``37% of the budget`` for work given a time; only the count while the total is unknown) and the time spent.
It is drawn only when stderr is a terminal and the command was not given --quiet or
--json, and it vanishes when the work ends, so what the command prints stays as it was.
Lines printed through ``err_console`` meanwhile appear above it. Colours follow the
console: ``NO_COLOR`` set in the environment draws it without any (rich reads it).
rich.progress is imported only when a bar is drawn.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

import click

from kbench.cli.console import err_console, label_column

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

WIDEST = 64
"""What is being done is cut to this many characters: the count and the time stay in view."""
PERCENT = "%"
"""The unit of work measured as a share of a budget: ``done`` and ``total`` are percentages."""


def quiet_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``-q/--quiet``: no progress on stderr."""
    return click.option("-q", "--quiet", is_flag=True,
                        help="No progress on stderr (drawn only on a terminal anyway).")(command)


def count_text(done: float, total: float | None, unit: str) -> str:
    """``3/8 steps, 5 left``; ``37% of the budget``; ``3 steps`` while the total is unknown."""
    if unit == PERCENT:
        return f"{done:.0f}% of the budget"
    if total is None:
        return f"{done:g} {unit.removesuffix('s') if done == 1 else unit}" if done else ""
    return f"{done:g}/{total:g} {unit}, {max(total - done, 0):g} left"


class LongWork:
    """A progress line for one piece of long work (module docstring); callable as a
    ``kbench.contract.progress.Step``."""

    def __init__(self, what: str, *, total: float | None = None, unit: str = "steps", quiet: bool = False,
                 console: Console | None = None) -> None:
        self.console = console or err_console
        self.shown = not quiet and self.console.is_terminal
        self.what, self.done, self.total, self.unit = what, 0.0, total, unit
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> LongWork:
        if not self.shown:
            return self
        from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            SpinnerColumn(), label_column(), BarColumn(), TextColumn("{task.fields[count]}", markup=False),
            TimeElapsedColumn(), console=self.console, transient=True,
        )
        self._task = self._bar.add_task(self.what, total=self._bar_total(), count=self._count())
        self._bar.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
        self._bar, self._task = None, None

    def __call__(self, what: str, done: float, total: float | None = None) -> None:
        """Now doing ``what``, ``done`` of ``total`` steps finished."""
        self.what, self.done, self.total = what, done, total
        if self._bar is not None and self._task is not None:
            shown = what if len(what) <= WIDEST else what[:WIDEST - 1] + "…"
            total = self._bar_total()
            if total is None:  # rich's update() takes None as "unchanged": back to unknown by hand
                for task in self._bar.tasks:
                    if task.id == self._task:
                        task.total = None
            self._bar.update(self._task, description=shown, completed=done, total=total, count=self._count())

    def advance(self, what: str | None = None, steps: float = 1) -> None:
        """One more step finished (``steps`` more), now doing ``what`` (else the same)."""
        self(what if what is not None else self.what, self.done + steps, self.total)

    def describe(self, what: str) -> None:
        """Now doing ``what``; the count stays."""
        self(what, self.done, self.total)

    def _bar_total(self) -> float | None:
        """The total rich is given: None (a pulsing bar) once the count reaches it, for rich
        stops the clock and the spinner of a task whose count reached its total, and the work
        goes on until it ends (an estimate overrun, the judging after the last step)."""
        total = 100.0 if self.unit == PERCENT else self.total
        return None if total is None or self.done >= total else total

    def _count(self) -> str:
        return count_text(self.done, self.total, self.unit)


def slot_steps(work: LongWork) -> Callable[[str, int, float], None]:
    """An interleaved comparison's ``on_slot`` drawn on ``work`` (unit PERCENT): the block being
    measured and the share of the budget used."""

    def on_slot(label: str, blocks: int, fraction: float) -> None:
        work.unit = PERCENT
        work(f"block {blocks + 1}: {label}", 100.0 * fraction, 100.0)

    return on_slot


def trial_steps(work: LongWork, sides: int) -> Callable[[str, int, int], None]:
    """A comparison of whole trials' ``on_trial`` (called as each trial starts) drawn on
    ``work``: the trial being run, and trials finished of ``sides`` x planned."""
    started = 0

    def on_trial(label: str, index: int, planned: int) -> None:
        nonlocal started
        work.unit = "trials"
        work(f"{label} trial {index + 1}", started, float(sides * planned))
        started += 1

    return on_trial


class BuildSteps:
    """A kernel build's makes (``kbench.kernels.make.BuildProgress``) drawn on ``work``: the make
    running, the file being compiled, objects compiled of how many an earlier build of the same
    recipe compiled (unknown the first time)."""

    def __init__(self, work: LongWork) -> None:
        self.work = work
        self.what = work.what
        self.expected: int | None = None

    def started(self, what: str, expected: int | None) -> None:
        self.what, self.expected = what, expected
        self.work.unit = "objects"
        self.work(what, 0, expected)

    def step(self, done: int, current: str) -> None:
        self.work(f"{self.what}: {current[-48:]}", done, self.expected)

    def finished(self) -> None:
        self.work(self.what, self.work.done, self.expected)
