"""What every export writer of ``report.interop`` shares: groups of runs, trials, units."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kbench.engine.stored_run import StoredRun

TOOL_FORMATS = ("hyperfine", "pyperf", "gobench")
"""Formats of other tools, for one run or for groups of runs."""
TABLE_FORMATS = ("csv", "parquet", "json")
"""Formats of the tidy table across runs."""

SECONDS_PER_UNIT = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


class ExportProblem(ValueError):
    """The runs cannot be written in the format asked for (the message says why)."""


@dataclass(frozen=True)
class Group:
    """Runs exported as one entry: one run, or the runs of one side of a comparison (``side``)."""

    label: str
    views: tuple[StoredRun, ...]
    side: bool = False

    @property
    def first(self) -> StoredRun:
        return self.views[0]


def imported(view: StoredRun, tool: str) -> dict[str, object] | None:
    """The header's record of the tool's file the run came from, when it came from ``tool``."""
    found = view.measurement.header.get("imported")
    return found if isinstance(found, dict) and found.get("format") == tool else None


def trials(view: StoredRun) -> list[np.ndarray]:
    """The run's primary values split into its trials: one trial per run, or for an imported
    run one per value of its ``trial`` column (executions, processes), in order."""
    values = view.values
    column = view.measurement.columns.get("trial")
    if column is None or "imported" not in view.measurement.header or column.size != values.size:
        return [values]
    return [values[column == number] for number in np.unique(column)]


def seconds(view: StoredRun, tool: str) -> float:
    """Seconds per unit of the run's metric; ExportProblem when it is not a time."""
    unit = view.record.unit
    if unit not in SECONDS_PER_UNIT:
        raise ExportProblem(f"run {view.record.id} ({view.record.metric}) is in {unit!r}, not a time: "
                            f"{tool}'s format holds times (export it as gobench, csv, parquet or json)")
    return SECONDS_PER_UNIT[unit]


def describe(view: StoredRun) -> str:
    """``benchmark k=v ...``: what a run measured, in one line."""
    params = " ".join(f"{key}={value}" for key, value in (view.record.params or {}).items())
    return f"{view.record.benchmark} {params}".strip()
