"""What a change point must have before it is shown: runs on both sides, a place between
versions, and the range of runs it could sit at.

Otava finds where a series shifts; these rules decide what of that may be said.

- **Versions.** When every point carries a commit, a change can only sit where the
  commit changes: runs of one commit measured one build. A change point found between
  two runs of one commit is moved to the most likely commit boundary near it
  (``best_split``).
- **Support.** A change point with fewer than ``MIN_SEGMENT_RUNS`` runs on either side
  is not reported. When its short side is an end of the series it is ``pending`` (more
  runs will come and decide it); when the short side lies between two change points it
  is ``transient`` (a blip of a run or two, which no later run can make longer). After
  one is taken away its neighbours' segments grow, and each neighbour is tested again
  (Welch's t-test on the values the detection saw, at the detection's level): a step
  that only existed against the blip goes too.
- **Range.** Where exactly a shift starts is uncertain when it is small against the
  noise. ``location_range`` gives every split between the neighbouring change points
  whose two-segment fit is not much worse than the best one: the profile likelihood of
  a mean shift with a common Gaussian variance, keeping splits with
  ``(SSE(k) - SSE(best)) / sigma^2 <= LOCATION_THRESHOLD``. The threshold is the 99 %
  point of chi-square with one degree of freedom; measured on simulated steps
  (tests/history/test_rules.py) the range holds the planted run in 96–97 % of series
  for a step of 2 noise standard deviations and in 99 % or more from 3 on; it is one
  run wide for steps of 6 or more. The commits a change could come from are those after
  the last run before the range, up to the first run after it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kbench.history.changes import Change, Segment
from kbench.stats.distributions import student_sf

MIN_SEGMENT_RUNS = 3
"""Runs a change point needs on each side before it is reported."""
LOCATION_THRESHOLD = 6.63
"""chi-square(1 degree of freedom) at 0.99: the profile-likelihood cut of ``location_range``."""

CANDIDATE, PENDING, TRANSIENT = "candidate", "pending", "transient"


@dataclass(frozen=True)
class JudgedChange:
    """A change point with its support status and the runs it could start at.

    ``first``..``last`` (inclusive) are the indexes of the points that could be the first
    after the change; ``change.index`` is the most likely one among them."""

    change: Change
    status: str  # CANDIDATE, PENDING or TRANSIENT
    first: int
    last: int


@dataclass(frozen=True)
class Judged:
    """Every change point of one series, by status, oldest first in each list."""

    candidates: list[JudgedChange]
    pending: list[JudgedChange]
    transient: list[JudgedChange]


def commit_boundaries(commits: Sequence[str | None]) -> np.ndarray | None:
    """``allowed[k]``: a change may start at point k (its commit differs from point k-1's).
    None when some point has no commit (then every split is allowed)."""
    if not commits or any(c is None for c in commits):
        return None
    allowed = np.zeros(len(commits), dtype=bool)
    allowed[1:] = [commits[k] != commits[k - 1] for k in range(1, len(commits))]
    return allowed


def split_costs(values: np.ndarray, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """(k, SSE(k)) for every split ``start < k < end`` of ``values[start:end]`` into two
    segments, each fitted by its mean."""
    x = np.asarray(values[start:end], dtype=np.float64)
    m = x.size
    if m < 2:
        return np.empty(0, dtype=np.int64), np.empty(0)
    x = x - x.mean()  # better conditioned sums
    sums, squares = np.cumsum(x), np.cumsum(x * x)
    k = np.arange(1, m)
    n1, n2 = k, m - k
    left = sums[k - 1]
    sse = squares[-1] - left**2 / n1 - (sums[-1] - left) ** 2 / n2
    return k + start, np.maximum(sse, 0.0)


def best_split(values: np.ndarray, start: int, end: int, allowed: np.ndarray | None) -> int | None:
    """The allowed split of ``values[start:end]`` with the smallest two-segment SSE (None: none allowed)."""
    ks, sse = split_costs(values, start, end)
    if allowed is not None:
        keep = allowed[ks]
        ks, sse = ks[keep], sse[keep]
    if ks.size == 0:
        return None
    return int(ks[int(np.argmin(sse))])


def location_range(
    values: np.ndarray, start: int, end: int, index: int, allowed: np.ndarray | None,
) -> tuple[int, int]:
    """(first, last): the allowed splits of ``values[start:end]`` whose fit is within
    ``LOCATION_THRESHOLD`` of the best (module docstring); always holds ``index``."""
    ks, sse = split_costs(values, start, end)
    if allowed is not None:
        keep = allowed[ks]
        ks, sse = ks[keep], sse[keep]
    if ks.size == 0:
        return index, index
    best = float(sse.min())
    dof = (end - start) - 2
    sigma2 = best / dof if dof > 0 else 0.0
    inside = ks[sse <= best] if sigma2 <= 0.0 else ks[(sse - best) / sigma2 <= LOCATION_THRESHOLD]
    first = min(int(inside.min()), index)
    last = max(int(inside.max()), index)
    return first, last


def welch_p(tested: np.ndarray, start: int, index: int, end: int) -> float:
    """Two-sided p of Welch's t-test of ``tested[start:index]`` against ``tested[index:end]``:
    scipy.stats.ttest_ind(equal_var=False)'s, its t tail from kbench.stats.distributions
    (Welch-Satterthwaite degrees of freedom; importing scipy.stats would cost ``kbench history``
    seconds of start-up)."""
    before, after = tested[start:index], tested[index:end]
    if before.size < 2 or after.size < 2:
        return 1.0 if float(np.ptp(tested[start:end])) == 0.0 else 0.0
    if float(np.ptp(before)) == 0.0 and float(np.ptp(after)) == 0.0:
        return 0.0 if float(before[0]) != float(after[0]) else 1.0
    share_before = float(np.var(before, ddof=1)) / before.size
    share_after = float(np.var(after, ddof=1)) / after.size
    spread = share_before + share_after
    t = (float(np.mean(before)) - float(np.mean(after))) / math.sqrt(spread)
    freedom = spread**2 / (share_before**2 / (before.size - 1) + share_after**2 / (after.size - 1))
    p = 2.0 * student_sf(abs(t), freedom)
    return p if math.isfinite(p) else 1.0


def judge(
    data: np.ndarray, tested: np.ndarray, changes: Sequence[Change], *, commits: Sequence[str | None] = (),
    max_pvalue: float = 0.001, min_runs: int = MIN_SEGMENT_RUNS,
) -> Judged:
    """Apply the rules of the module docstring to the change points ``changes`` of ``data``
    (``tested``: the values the detection saw, e.g. winsorized)."""
    n = int(data.size)
    allowed = commit_boundaries(commits)
    indexes: list[int] = []
    p_values: dict[int, float] = {}
    ordered = sorted(changes, key=lambda c: c.index)
    for i, change in enumerate(ordered):
        index = change.index
        if allowed is not None and not allowed[index]:
            start = indexes[-1] if indexes else 0
            end = ordered[i + 1].index if i + 1 < len(ordered) else n
            moved = best_split(tested, start, end, allowed)
            if moved is None or moved in indexes:
                continue
            index = moved
        if index in indexes:
            continue
        indexes.append(index)
        p_values[index] = change.p_value
    indexes.sort()
    pending: list[JudgedChange] = []
    transient: list[JudgedChange] = []
    while True:
        bounds = [0, *indexes, n]
        short = [
            (min(indexes[i] - bounds[i], bounds[i + 2] - indexes[i]), i)
            for i in range(len(indexes))
            if min(indexes[i] - bounds[i], bounds[i + 2] - indexes[i]) < min_runs
        ]
        if not short:
            break
        _, i = min(short)
        index = indexes[i]
        start, end = bounds[i], bounds[i + 2]
        at_end = (index - start < min_runs and start == 0) or (end - index < min_runs and end == n)
        first, last = location_range(tested, start, end, index, allowed)
        judged = JudgedChange(_change(data, index, p_values[index], start, end), PENDING if at_end else TRANSIENT,
                              first, last)
        (pending if at_end else transient).append(judged)
        del indexes[i]
        _retest(tested, indexes, p_values, n, max_pvalue, transient, data, allowed, i)
    bounds = [0, *indexes, n]
    candidates = []
    for i, index in enumerate(indexes):
        start, end = bounds[i], bounds[i + 2]
        first, last = location_range(tested, start, end, index, allowed)
        candidates.append(JudgedChange(_change(data, index, p_values[index], start, end), CANDIDATE, first, last))
    return Judged(candidates, sorted(pending, key=_at), sorted(transient, key=_at))


def _retest(
    tested: np.ndarray, indexes: list[int], p_values: dict[int, float], n: int, max_pvalue: float,
    transient: list[JudgedChange], data: np.ndarray, allowed: np.ndarray | None, removed_at: int,
) -> None:
    """The neighbours of a removed change point (now at ``removed_at - 1`` and ``removed_at``)
    are tested again over their grown segments; one that no longer passes is transient too."""
    for i in sorted({removed_at - 1, removed_at}, reverse=True):
        if not 0 <= i < len(indexes):
            continue
        bounds = [0, *indexes, n]
        index, start, end = indexes[i], bounds[i], bounds[i + 2]
        p = welch_p(tested, start, index, end)
        if p <= max_pvalue:
            p_values[index] = max(p_values[index], p)
            continue
        first, last = location_range(tested, start, end, index, allowed)
        transient.append(JudgedChange(_change(data, index, p, start, end), TRANSIENT, first, last))
        del indexes[i]


def _change(data: np.ndarray, index: int, p_value: float, start: int, end: int) -> Change:
    return Change(index=index, p_value=p_value, before=Segment.of(data[start:index]),
                  after=Segment.of(data[index:end]))


def _at(judged: JudgedChange) -> int:
    return judged.change.index
