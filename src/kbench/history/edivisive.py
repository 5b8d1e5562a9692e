"""Change points of a series: E-divisive means in sliding windows, weak points merged away by a t-test.

The method of Fleming et al., "Hunter: Using Change Point Detection to Hunt for Performance
Regressions" (ICPE 2023), which Apache Otava implements, written here on numpy:

1. **Split.** Windows of ``window`` points slide over the series by half a window (a
   window starts at the last change point it found when that is further on). In each
   window, E-divisive means (Matteson and James, "A Nonparametric Approach for Multiple
   Change Point Analysis of Multivariate Data", 2014) splits the segment that has the
   largest energy statistic

       Q(X, Y) = 2/(n+m) Σ|x_i - y_j| - 2m/((n+m)(n-1)) Σ_{i<k}|x_i - x_k| - 2n/((n+m)(m-1)) Σ_{j<k}|y_j - y_k|

   over every split point τ and end κ of the segment (X = the points before τ, n of them;
   Y = the points from τ to κ, m of them; a sum over one point's pairs is 0), as long as
   a two-sample t-test between the two sides of the split (the segment's points before
   and after τ) gives p <= the first-pass level: 10 × ``max_pvalue`` below 0.05 (2 × below
   0.5). The union over the windows are the *weak* change points.
2. **Merge.** Each weak point is tested between its neighbours (the points from the one
   before to the one after). While the weakest has p >= ``max_pvalue`` — or, when all
   pass, the smallest relative change of the means is 0 — it is removed and its two
   neighbours are tested again.

The t-test is Student's with the pooled variance of both sides (sums of squares over
n + m - 2 degrees of freedom; a side of one point adds none), two-sided; its tail comes from
``kbench.stats.distributions.student_sf`` (scipy.special would double ``kbench history``'s
start-up). Apache Otava
0.8 differs in two details, both corrected here: it passes population standard deviations
(ddof 0) where the test takes sample ones, which makes its p-values smaller, and after a
removal it tests again the point after the removed one and the one after that, not the one
before. Ties between equal energy statistics go to the earliest split and end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import pairwise

import numpy as np
from numpy.typing import NDArray

from kbench.stats.distributions import student_sf


@dataclass(frozen=True)
class ChangePoint:
    """A change point: the series differs from ``index`` on; ``p_value`` of its t-test between its neighbours."""

    index: int
    p_value: float


def change_points(values: NDArray[np.float64], *, window: int = 50, max_pvalue: float = 0.001) -> list[ChangePoint]:
    """The change points of ``values`` by the module's method, oldest first."""
    series = np.asarray(values, dtype=np.float64)
    if window < 2:
        raise ValueError(f"the window must hold at least 2 points, got {window}")
    first_pass = max_pvalue * 10 if max_pvalue < 0.05 else (max_pvalue * 2 if max_pvalue < 0.5 else max_pvalue)
    weak = _split(series, window, first_pass)
    return _merge(series, weak, max_pvalue)


def _split(series: NDArray[np.float64], window: int, level: float) -> list[int]:
    found: set[int] = set()
    start, step = 0, window // 2
    while start < series.size:
        end = min(start + window, series.size)
        new = _e_divisive(series[start:end], level)
        found.update(start + index for index in new)
        start = max(start + max(new) if new else 0, start + step)
    return sorted(found)


def _e_divisive(segment: NDArray[np.float64], level: float) -> list[int]:
    """Split points of one window, each significant at ``level`` when it was found."""
    points: list[int] = []
    distances = np.abs(segment[:, None] - segment[None, :])
    while True:
        bounds = [0, *points, segment.size]
        best: tuple[float, int, int, int] | None = None  # (Q, split, interval start, interval end)
        for low, high in pairwise(bounds):
            if high - low < 2:
                continue
            q, split = _best_split(distances[low:high, low:high])
            if best is None or q > best[0]:
                best = (q, low + split, low, high)
        if best is None:
            return points
        _, split, low, high = best
        if student_p(segment[low:split], segment[split:high]) > level:
            return points
        points = sorted([*points, split])


def _best_split(distances: NDArray[np.float64]) -> tuple[float, int]:
    """(the largest energy statistic Q over every split τ and end κ of the segment, its τ)."""
    n = distances.shape[0]
    upper = np.triu(distances, k=1)
    prefix = np.zeros((n + 1, n + 1))
    prefix[1:, 1:] = upper.cumsum(axis=0).cumsum(axis=1)

    def block(r0: NDArray[np.int64], r1: NDArray[np.int64], c0: NDArray[np.int64], c1: NDArray[np.int64]) -> NDArray[
            np.float64]:
        """Σ upper[r0:r1, c0:c1] for arrays of bounds."""
        found: NDArray[np.float64] = prefix[r1, c1] - prefix[r0, c1] - prefix[r1, c0] + prefix[r0, c0]
        return found

    tau = np.arange(1, n)[:, None]  # the first point of Y
    kappa = np.arange(2, n + 1)[None, :]  # one past its last point
    tau, kappa = np.broadcast_arrays(tau, kappa)
    zero = np.zeros_like(tau)
    x_count, y_count = tau.astype(np.float64), (kappa - tau).astype(np.float64)
    total = x_count + y_count
    cross = block(zero, tau, tau, kappa)
    within_x = block(zero, tau, zero, tau)
    within_y = block(tau, kappa, tau, kappa)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = (2.0 / total * cross
             - np.where(x_count > 1, 2.0 * y_count / (total * (x_count - 1)), 0.0) * within_x
             - np.where(y_count > 1, 2.0 * x_count / (total * (y_count - 1)), 0.0) * within_y)
    q = np.where(kappa > tau, q, -np.inf)
    row, column = np.unravel_index(int(np.argmax(q)), q.shape)
    return float(q[row, column]), int(tau[row, column])


def student_p(left: NDArray[np.float64], right: NDArray[np.float64]) -> float:
    """Two-sided p of Student's two-sample t-test with the pooled variance (module docstring);
    1 for fewer than three points in all; 0 or 1 when neither side varies."""
    n, m = left.size, right.size
    if n == 0 or m == 0 or n + m <= 2:
        return 1.0
    difference = float(left.mean() - right.mean())
    squares = float(((left - left.mean()) ** 2).sum() + ((right - right.mean()) ** 2).sum())
    freedom = n + m - 2
    variance = squares / freedom
    if variance == 0:
        return 1.0 if difference == 0 else 0.0
    t = abs(difference) / math.sqrt(variance * (1.0 / n + 1.0 / m))
    return 2.0 * student_sf(t, freedom)


def _magnitude(left: NDArray[np.float64], right: NDArray[np.float64]) -> float:
    """max(|b/a - 1|, |a/b - 1|) of the means a before and b after (0 when a mean is 0)."""
    before, after = float(left.mean()), float(right.mean())
    forward = after / before - 1.0 if before else 0.0
    backward = before / after - 1.0 if after else 0.0
    return max(abs(forward), abs(backward))


def _merge(series: NDArray[np.float64], weak: list[int], max_pvalue: float) -> list[ChangePoint]:
    points = list(weak)

    def tested(i: int) -> tuple[float, float]:
        low = points[i - 1] if i > 0 else 0
        high = points[i + 1] if i + 1 < len(points) else series.size
        left, right = series[low:points[i]], series[points[i]:high]
        return student_p(left, right), _magnitude(left, right)

    stats = [tested(i) for i in range(len(points))]
    while points:
        weakest = max(range(len(points)), key=lambda i: stats[i][0])
        if stats[weakest][0] < max_pvalue:
            weakest = min(range(len(points)), key=lambda i: stats[i][1])
            if stats[weakest][1] > 0:
                break
        del points[weakest], stats[weakest]
        for i in (weakest - 1, weakest):
            if 0 <= i < len(points):
                stats[i] = tested(i)
    return [ChangePoint(index, p) for index, (p, _) in zip(points, stats, strict=True)]
