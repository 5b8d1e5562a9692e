"""Which entries of a log belong to the measured part of a benchmark run.

kbench.ko logs one ``run`` entry per worker when its recorded loop ends: key = the
run's number since the module loaded, data = samples recorded, start = when recording
began, cycles = how long it lasted, cpu = the worker's CPU (flag ``unbound`` when it was
not pinned). Entries a benchmark logged during its warm-up, the batch calibration or
the start barrier fall outside those windows. When a log holds windows, the measured
entries are those lying wholly inside a window of the *last* run (the highest number)
on the window's CPU (on any CPU for an unbound worker). A log without windows (a
workload that is not a kbench.ko run) is measured as a whole.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kbench.trace.log import FLAG_UNBOUND, KIND_RUN, TraceLog


@dataclass(frozen=True)
class Selection:
    """The measured entries (no ``run`` windows among them) and what was left out."""

    entries: np.ndarray
    windows: np.ndarray
    outside: int  # entries logged outside the windows (warm-up, calibration, barrier)


def last_run_windows(log: TraceLog) -> np.ndarray:
    """The ``run`` windows of the last run in the log (one per worker), by start."""
    windows = log.of_kind(KIND_RUN)
    if windows.size == 0:
        return windows
    last = windows[windows["key"] == windows["key"].max()]
    ordered: np.ndarray = last[np.argsort(last["start"], kind="stable")]
    return ordered


def measured_entries(log: TraceLog) -> Selection:
    """The entries inside the last run's windows (all entries when there are none)."""
    others = log.entries[log.entries["kind"] != KIND_RUN]
    windows = last_run_windows(log)
    if windows.size == 0:
        return Selection(others, windows, 0)
    inside = np.zeros(others.size, dtype=bool)
    end = others["start"] + others["cycles"]
    for window in windows:
        low = int(window["start"])
        high = low + int(window["cycles"])
        hit = (others["start"] >= low) & (end <= high)
        if not int(window["flags"]) & FLAG_UNBOUND:
            hit &= others["cpu"] == window["cpu"]
        inside |= hit
    return Selection(others[inside], windows, int(others.size - inside.sum()))
