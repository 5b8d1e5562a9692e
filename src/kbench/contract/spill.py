"""The spill: a run's samples on disk as they are taken, so that they outlive kbench.

While a stored run is measured (``engine.runner.execute_run``), its samples are streamed
to a spill file beside the store (``Store.spill_path``): the probe writes them itself
(``kbench-probe run --spill FILE``, at least once a second); for a run in a guest the
host copies the guest's spill, or kbench.ko's live samples, into it as they arrive. A
run that finishes stores its samples and deletes the file. A run that does not (kbench
killed, the guest dead, the run stopped at its bound) keeps it, and the samples are
stored with the run by the kbench that notices (docs/probe-format.md, "Spill").

The format is a probe record whose header was written before its samples:

    one JSON line: a ``kbench-probe/1`` or ``kbench-kmod/1`` header with ``"spill": true``
                   and ``"n": null`` (the rows are not counted yet)
    then little-endian u64 rows of ``len(columns)`` values each, to the end of the file

A partial last row is what a writer killed in mid-write left; it is dropped.

``spilling_to`` says where the run being measured spills (the engine sets it, the kinds
pass it to the target); ``read_spill`` reads a spill back.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

SPILL_SUFFIX = ".spill"
ROW_VALUE_BYTES = 8
HEADER_LIMIT = 1 << 20
"""A header line longer than this is not a spill's (its header is a few KB)."""

_destination: ContextVar[Path | None] = ContextVar("kbench_spill_destination", default=None)


@contextlib.contextmanager
def spilling_to(path: Path | None) -> Iterator[None]:
    """Inside the block, the run being measured streams its samples to ``path`` (None: nowhere)."""
    token = _destination.set(path)
    try:
        yield
    finally:
        _destination.reset(token)


def spill_destination() -> Path | None:
    """Where the run being measured streams its samples, or None."""
    return _destination.get()


@dataclass(frozen=True)
class SpillHead:
    """A spill's header and how many whole rows follow it, read without numpy."""

    header: dict[str, Any]
    columns: list[str]
    rows: int
    samples_offset: int
    dropped_bytes: int


@dataclass(frozen=True)
class SpillContents:
    """A spill read back: its header (``n`` set to the rows found) and every column in order."""

    header: dict[str, Any]
    columns: dict[str, np.ndarray]
    dropped_bytes: int

    @property
    def rows(self) -> int:
        return int(self.header["n"])


class SpillDamaged(ValueError):
    """The file is not a spill (no header line, or not one of a kbench run)."""


def spill_head(path: Path) -> SpillHead | None:
    """The header and row count of the spill at ``path``; None when it holds nothing yet
    (empty, or its header line not written whole). SpillDamaged when it is not a spill."""
    try:
        with open(path, "rb") as spill:
            first = spill.readline(HEADER_LIMIT)
            size = os.fstat(spill.fileno()).st_size
    except FileNotFoundError:
        return None
    if not first.endswith(b"\n"):
        if len(first) >= HEADER_LIMIT:
            raise SpillDamaged(f"{path}: no header line in its first {HEADER_LIMIT} bytes")
        return None
    try:
        header = json.loads(first)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise SpillDamaged(f"{path}: its header is not JSON ({exc})") from exc
    if not isinstance(header, dict) or header.get("spill") is not True:
        raise SpillDamaged(f"{path}: not a spill file (its header has no \"spill\": true)")
    columns = header.get("columns") or ["ticks"]
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) for c in columns):
        raise SpillDamaged(f"{path}: its header's columns are not a list of names")
    row_bytes = ROW_VALUE_BYTES * len(columns)
    payload = size - len(first)
    return SpillHead(header=header, columns=columns, rows=payload // row_bytes, samples_offset=len(first),
                     dropped_bytes=payload % row_bytes)


def read_spill(path: Path) -> SpillContents | None:
    """The spill at ``path`` with every whole row; None when it holds no header yet."""
    import numpy as np

    head = spill_head(path)
    if head is None:
        return None
    ncols = len(head.columns)
    with open(path, "rb") as spill:
        spill.seek(head.samples_offset)
        data = spill.read(head.rows * ncols * ROW_VALUE_BYTES)
    rows = len(data) // (ncols * ROW_VALUE_BYTES)  # the file may have shrunk since (never: append-only)
    table = np.frombuffer(data[: rows * ncols * ROW_VALUE_BYTES], dtype="<u8").reshape(rows, ncols)
    header = {**head.header, "n": rows}
    columns = {name: table[:, i].copy() for i, name in enumerate(head.columns)}
    return SpillContents(header=header, columns=columns, dropped_bytes=head.dropped_bytes)


class SpillWriter:
    """Appends a run's samples to its spill file; every ``append`` reaches the kernel at once
    (one ``write``), so that what was appended survives this process (not a power cut)."""

    def __init__(self, path: Path, header: dict[str, Any] | None = None):
        """Start the spill at ``path`` (truncated); ``header`` is written first unless the
        bytes to come carry their own (a copy of the guest probe's spill)."""
        self.path = path
        self.bytes_written = 0
        self.failed: str | None = None
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        if header is not None:
            self.append((json.dumps({**header, "spill": True, "n": None}) + "\n").encode())

    def append(self, data: bytes) -> None:
        """Write ``data`` now. A failure (disk full) stops the spill, not the run: ``failed`` says why."""
        if self._fd is None or not data:
            return
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
                self.bytes_written += written
        except OSError as exc:
            self.failed = f"writing the spill {self.path} failed: {exc.strerror or exc}"
            self.close()

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SpillWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
