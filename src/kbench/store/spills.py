"""Spill files beside the store: where a run's spill goes, and what storing a spill writes.

A run measured by ``execute_run`` streams its samples to ``run-<id>.spill`` in the store's
spill directory (``spill_dir``: ``FILE-spill/`` next to a SQLite file, else a directory
of ``$XDG_STATE_HOME/kbench/spill`` named after the database). ``kbench.contract.spill``
has the format. This module turns a spill into what ``Store.finish_run`` stores: the
columns, the spill's header as the run's header (``n`` counted, ``interrupted`` set,
``recovered`` saying from where), the primary metric's summary and a warning.
Nothing here imports SQLAlchemy (the read-only views count a spill's rows too).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbench.contract.spill import SPILL_SUFFIX, SpillDamaged, read_spill, spill_head

if TYPE_CHECKING:
    import numpy as np

    from kbench.store.records import SummaryRecord

SPILL_DIR_SUFFIX = "-spill"
DAMAGED_SUFFIX = ".damaged"
"""A damaged spill is renamed ``run-<id>.spill.damaged``: kept for a person, no longer a spill."""
SPILL_PREFIX = "run-"
RECOVERED_WARNING = (
    "recovered from the run's spill file: kbench did not finish this run ({why}); the {rows} samples "
    "taken before are kept, in order, but its header lacks what only the end of a run writes "
    "(end time, usage, the probe's own warnings)"
)


def spill_dir_for(sqlite_file: Path | None, identity: Callable[[], str]) -> Path:
    """The directory of a store's spills: beside a SQLite file, else in kbench's state directory
    under the store's identity (``Store.identity``, asked only then): two databases behind one URL
    (one dropped and made again, another server on the same port) never share spills."""
    if sqlite_file is not None:
        return sqlite_file.with_name(sqlite_file.name + SPILL_DIR_SUFFIX)
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "kbench" / "spill" / identity()


def spill_file(spill_dir: Path, run_id: int) -> Path:
    return spill_dir / f"{SPILL_PREFIX}{run_id}{SPILL_SUFFIX}"


def spill_files(spill_dir: Path) -> dict[int, Path]:
    """Every spill in ``spill_dir`` by run id (none when the directory does not exist)."""
    found = {}
    try:
        entries = list(spill_dir.iterdir())
    except OSError:
        return {}
    for path in entries:
        name = path.name
        if name.startswith(SPILL_PREFIX) and name.endswith(SPILL_SUFFIX):
            number = name[len(SPILL_PREFIX) : -len(SPILL_SUFFIX)]
            if number.isdigit():
                found[int(number)] = path
    return found


def spilled_rows(spill_dir: Path | None, run_id: int) -> int:
    """How many samples run ``run_id``'s spill holds (0 without one, or for a damaged one)."""
    if spill_dir is None:
        return 0
    try:
        head = spill_head(spill_file(spill_dir, run_id))
    except (SpillDamaged, OSError):
        return 0
    return head.rows if head is not None else 0


def remove_spill(spill_dir: Path | None, run_id: int) -> None:
    if spill_dir is not None:
        with contextlib.suppress(OSError):
            spill_file(spill_dir, run_id).unlink()


@dataclass(frozen=True)
class SpilledRun:
    """What storing a spill writes into its run (``Store.finish_run``'s arguments)."""

    columns: dict[str, np.ndarray]
    probe_header: dict[str, Any]
    summaries: list[SummaryRecord]
    warning: str

    @property
    def rows(self) -> int:
        return int(self.probe_header["n"])


def spilled_run(path: Path, *, metric: str, unit: str, subtract_overhead: bool, why: str) -> SpilledRun | None:
    """The spill at ``path`` as its run's samples, header and primary summary; None when it
    holds no sample. ``why``: how the run ended, for the warning. SpillDamaged if it is not a spill."""
    from kbench.contract.measurement import Measurement
    from kbench.stats.summary import summarize
    from kbench.store.records import SummaryRecord, summary_columns

    contents = read_spill(path)
    if contents is None and path.exists() and path.stat().st_size:
        # the run is over: a header line that never ended is not one still being written
        raise SpillDamaged(f"{path}: its header line is cut short ({path.stat().st_size} bytes, no end of line)")
    if contents is None or contents.rows == 0:
        return None
    header = dict(contents.header)
    header["interrupted"] = True
    header["recovered"] = {"from": "spill", "rows": contents.rows, "partial_row_bytes": contents.dropped_bytes}
    warning = RECOVERED_WARNING.format(why=why, rows=contents.rows)
    header["warnings"] = [*header.get("warnings", []), warning]
    measurement = Measurement(header=header, columns=contents.columns, interrupted=True, stderr="")
    summaries = []
    basis = "raw"
    overhead_known = isinstance(header.get("overhead"), dict) and header["overhead"].get("median_ticks") is not None
    if subtract_overhead and overhead_known:
        basis = "overhead-corrected"
    try:
        values = measurement.per_op(unit, subtract_overhead=basis != "raw")
    except (KeyError, TypeError, ValueError):
        values = None  # not timed operations: stored without a summary (readers summarise again)
    if values is not None and values.size:
        summary = summarize(values)
        summaries.append(SummaryRecord(metric=metric, unit=unit, basis=basis, values=summary_columns(summary),
                                       details=summary.to_dict()))
    return SpilledRun(columns=contents.columns, probe_header=header, summaries=summaries, warning=warning)
