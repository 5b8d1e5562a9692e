"""Change points of a series: E-divisive means with a significance test (``history.edivisive``).

The Hunter method (E-divisive in sliding windows, weak change points merged away until each
remaining one passes a two-sample t-test at ``max_pvalue``; Apache Otava's algorithm,
written in ``edivisive.py`` on numpy) runs on the series *winsorized*: values
further than ``winsorize`` robust
standard deviations (1.4826 × MAD) from the series' median are clipped to that bound. A
disturbed run (a spike of +50 %) then weighs no more than a 3-sigma point, so it can
neither inflate the t-test's variance enough to hide a step nor make one by itself, while
ordinary points keep their values (ranks would lose the gap at a step and misplace it).
Measured on simulated series (benchmarks/history_detection.py, docs/history.md).

The original values then describe each change: the segments between neighbouring change
points give the median, mean and standard deviation before and after.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from kbench.exit_codes import KbenchError

MIN_POINTS = 4
"""Shorter series have no change point (there is nothing to test a split against)."""
PARALLEL_MIN_POINTS = 50_000
"""Below this many points in all, one process is faster than starting workers."""


class HistoryUnavailable(KbenchError, RuntimeError):
    """Change points cannot be computed here (kept for callers that map it to an exit code)."""


@dataclass(frozen=True)
class DetectionSettings:
    """How change points are found; the defaults are the ones measured in docs/history.md."""

    window: int = 50  # the sliding window (points) of the split step
    max_pvalue: float = 0.001  # a change point must pass the t-test at this level
    winsorize: float | None = 3.0  # clip at median ± this many robust SDs before testing; None: raw values

    def __post_init__(self) -> None:
        if self.window < 4:
            raise ValueError(f"the detection window must be at least 4 points, got {self.window}")
        if not 0 < self.max_pvalue < 1:
            raise ValueError(f"max p-value must be between 0 and 1, got {self.max_pvalue}")
        if self.winsorize is not None and not self.winsorize > 0:
            raise ValueError(f"the winsorizing bound must be positive, got {self.winsorize}")

    def to_json(self) -> dict[str, Any]:
        tested = f"values winsorized at {self.winsorize:g} robust SD" if self.winsorize else "raw values"
        return {**asdict(self), "method": f"e-divisive means in sliding windows (Hunter), t-test on {tested}"}


@dataclass(frozen=True)
class Segment:
    """The points between two neighbouring change points."""

    n: int
    median: float
    mean: float
    stdev: float  # sample standard deviation of the points (0 for one point)

    @classmethod
    def of(cls, values: np.ndarray) -> Segment:
        return cls(
            n=int(values.size), median=float(np.median(values)), mean=float(values.mean()),
            stdev=float(values.std(ddof=1)) if values.size > 1 else 0.0,
        )

    @property
    def stdev_pct(self) -> float:
        return 100.0 * self.stdev / abs(self.mean) if self.mean else 0.0


@dataclass(frozen=True)
class Change:
    """A change point: the series is different from ``index`` on (the first point after it)."""

    index: int
    p_value: float
    before: Segment
    after: Segment

    @property
    def change_pct(self) -> float:
        """Relative change of the segment medians, in percent of the one before (0 when that is 0)."""
        if self.before.median == 0:
            return 0.0
        return 100.0 * (self.after.median / self.before.median - 1.0)


def detect(values: Sequence[float] | np.ndarray, settings: DetectionSettings | None = None) -> list[Change]:
    """The change points of one series, oldest first."""
    settings = settings or DetectionSettings()
    data = np.asarray(values, dtype=np.float64)
    if data.ndim != 1:
        raise ValueError(f"a series is one-dimensional, got shape {data.shape}")
    if not np.isfinite(data).all():
        raise ValueError("a series must hold finite values only")
    if data.size < MIN_POINTS or float(np.ptp(data)) == 0.0:
        return []
    from kbench.history.edivisive import change_points

    tested = winsorized(data, settings.winsorize) if settings.winsorize else data
    found = change_points(tested, window=settings.window, max_pvalue=settings.max_pvalue)
    indexes = [(point.index, point.p_value) for point in found]
    bounds = [0, *(index for index, _ in indexes), int(data.size)]
    return [
        Change(
            index=index, p_value=p_value,
            before=Segment.of(data[bounds[i]:index]), after=Segment.of(data[index:bounds[i + 2]]),
        )
        for i, (index, p_value) in enumerate(indexes)
    ]


def winsorized(values: np.ndarray, bound: float) -> np.ndarray:
    """``values`` clipped to median ± ``bound`` × 1.4826 × MAD (unchanged when the MAD is 0)."""
    median = float(np.median(values))
    spread = 1.4826 * float(np.median(np.abs(values - median)))
    if spread == 0:
        return values
    clipped: np.ndarray = np.clip(values, median - bound * spread, median + bound * spread)
    return clipped


def detect_many(
    series: Sequence[np.ndarray], settings: DetectionSettings | None = None, *, workers: int | None = None
) -> list[list[Change]]:
    """``detect`` for many series; on several CPUs when there is enough work to share.

    The detection spends its time in small numpy calls per window, so many series are
    spread over worker processes, one per CPU.
    """
    settings = settings or DetectionSettings()
    if workers is None:
        workers = len(os.sched_getaffinity(0))
    total = sum(len(s) for s in series)
    if workers <= 1 or len(series) < 2 or total < PARALLEL_MIN_POINTS:
        return [detect(s, settings) for s in series]
    from concurrent.futures import ProcessPoolExecutor  # here: most histories are detected in this process

    chunk = max(1, len(series) // (workers * 8))
    with ProcessPoolExecutor(
        max_workers=workers, initializer=_worker_dies_with_parent, initargs=(os.getpid(),)
    ) as pool:
        return list(pool.map(detect, series, [settings] * len(series), chunksize=chunk))


def _worker_dies_with_parent(parent: int) -> None:
    """A worker is killed with SIGTERM when the process that started it dies (PR_SET_PDEATHSIG)."""
    import ctypes

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pool's own shutdown still applies
        return
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)
