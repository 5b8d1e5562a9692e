"""The numbers one slot of an interleaved comparison contributes: one per metric.

A slot is one short measurement of one side (``kbench.engine.interleaved``): a few
executions of a command, or a short run of the probe or of kbench.ko.

- commands: ``command.cpu`` = mean over the slot's executions of the child's user +
  system CPU time (``utime_ns + stime_ns`` from wait4's rusage, which Linux derives
  from the task's nanosecond runtime), and ``command.wall`` = mean wall time of spawn
  + exec + wait4. Means, not medians: a slot holds one to a few executions, and a
  slow one is exactly what the block-level rank test is robust to.
- per-operation timings (syscalls, in-kernel functions): the interquartile mean of the
  slot's per-operation values (the mean of the middle half): as robust as the median
  to interrupts and preemption, but not stuck on the timer's ticks the way a median of
  quantized samples is (a getppid sample moves in steps of 0.4%).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.stats.validate import as_samples

CPU = "cpu"
WALL = "wall"
COMMAND_METRICS = {CPU: "command.cpu", WALL: "command.wall"}


def interquartile_mean(values: ArrayLike) -> float:
    """Mean of the values from the 25th to the 75th percentile position (sorted, ends included:
    indices floor(n/4) .. n - floor(n/4) - 1); the plain mean below 4 values.

    Raises ``ValueError`` for input ``kbench.stats.as_samples`` refuses.
    """
    ordered = np.sort(as_samples(values))
    quarter = ordered.size // 4
    return float(ordered[quarter : ordered.size - quarter].mean())


def interquartile_means(values: ArrayLike, valid: ArrayLike) -> NDArray[np.float64]:
    """``interquartile_mean`` of each row's valid values (``valid`` a boolean array of the same
    shape); NaN for a row without any. Rows may hold different numbers of valid values."""
    rows = np.asarray(values, dtype=np.float64)
    keep = np.asarray(valid, dtype=bool)
    if rows.ndim != 2 or keep.shape != rows.shape:
        raise ValueError(f"values and valid must be 2-D arrays of one shape, got {rows.shape} and {keep.shape}")
    ordered = np.sort(np.where(keep, rows, np.inf), axis=1)  # valid values first, in order
    count = keep.sum(axis=1)
    low = count // 4
    high = count - low
    sums = np.concatenate([np.zeros((rows.shape[0], 1)), np.cumsum(np.where(np.isfinite(ordered), ordered, 0.0),
                                                                   axis=1)], axis=1)
    index = np.arange(rows.shape[0])
    with np.errstate(invalid="ignore", divide="ignore"):
        means: NDArray[np.float64] = (sums[index, high] - sums[index, low]) / (high - low)
    means[count == 0] = np.nan
    return means


def command_slot(wall_ns: ArrayLike, utime_ns: ArrayLike, stime_ns: ArrayLike) -> dict[str, float]:
    """{"command.cpu": mean user+system ns, "command.wall": mean wall ns} of one slot's executions."""
    cpu = np.asarray(utime_ns, dtype=np.float64) + np.asarray(stime_ns, dtype=np.float64)
    return {
        COMMAND_METRICS[CPU]: float(as_samples(cpu).mean()),
        COMMAND_METRICS[WALL]: float(as_samples(wall_ns).mean()),
    }
