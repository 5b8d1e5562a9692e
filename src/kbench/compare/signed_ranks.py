"""The Wilcoxon signed-rank test of paired log-ratios, and the interval it inverts into.

Input: d_1..d_n, one log-ratio log(new / base) per block of interleaved measurements
(``kbench.compare.paired``). Zeros are dropped (Wilcoxon's rule, scipy's
``zero_method="wilcox"``); the n' others are ranked by |d| (average ranks for ties).

    T+ = sum of the ranks of the positive d_i

Under H0 every sign is + or - with probability 1/2 independently of |d| (for blocks in
a randomized ABBA order this holds *by design*: swapping the two sides of a block is
one of its two equally likely orders and turns d into -d), so T+ has mean
n'(n'+1)/4 and the null distribution below whatever the noise looks like - drift,
spikes, heavy tails or a machine that switches between speeds.

Two-sided p-value, by one of two methods:

- "exact" when no |d| ties and n' <= ``SIGNED_RANK_EXACT_MAX``:
  p = min(1, 2 P(T0 <= min(T+, N - T+))), N = n'(n'+1)/2, with T0 the exact null
  distribution (the number of subsets of {1..n'} with each sum, ``null_cdf``);
- "asymptotic" otherwise: z = (|T+ - N/2| - 0.5) / sigma,
  sigma^2 = n'(n'+1)(2n'+1)/24 - sum(t^3 - t)/48 (t: sizes of groups of tied |d|),
  p = min(1, 2 (1 - Phi(z))).

Both equal ``scipy.stats.wilcoxon(d, method=<method>, correction=<asymptotic>)``
(checked in tests). The minimum attainable p is 2 / 2^n' with the exact method (0.031
at 6 blocks, 0.0078 at 8).

Interval (Tukey; the one-sample Hodges-Lehmann): the n(n+1)/2 Walsh averages
W = (d_i + d_j)/2, i <= j, sorted. The signed-rank statistic of d - delta equals the
number of Walsh averages above delta (no ties), so the set of shifts delta the test
does not reject at level alpha is [W_(c+1), W_(M-c)] with M = n(n+1)/2 and c the
critical count: the largest c with 2 P(T0 <= c) <= alpha. The estimate is the median
of W. The interval uses all n values (zeros included: they are data about delta).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import floor, sqrt

import numpy as np
from numpy.typing import NDArray

from kbench.compare.thresholds import SIGNED_RANK_EXACT_MAX
from kbench.stats.distributions import normal_cdf, normal_quantile

EXACT = "exact"
ASYMPTOTIC = "asymptotic"


@dataclass(frozen=True)
class SignedRankTest:
    """Outcome of ``signed_rank_test``.

    t_plus: the sum of the ranks of the positive values. n_used: values after dropping
    zeros. p_value: two-sided. method: EXACT or ASYMPTOTIC. sigma: the (tie-corrected)
    null sd of T+. ties: tied |d| among the values used. min_attainable_p: the smallest
    p this method can give at this size (and sigma).
    """

    t_plus: float
    n_used: int
    p_value: float
    method: str
    sigma: float
    ties: bool
    min_attainable_p: float


@lru_cache(maxsize=128)
def _null_cdf_cached(n: int) -> NDArray[np.float64]:
    # counts[s] = subsets of {1..n} summing to s; add rank k: counts'[s] = counts[s] + counts[s-k]
    total = n * (n + 1) // 2
    counts = np.zeros(total + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        counts[k:] = counts[k:] + counts[:-k].copy()
    cdf: NDArray[np.float64] = np.cumsum(counts) / 2.0**n
    cdf.setflags(write=False)
    return cdf


def null_cdf(n: int) -> NDArray[np.float64]:
    """[P(T0 <= t) for t = 0 .. n(n+1)/2] under H0 without ties (read-only, cached)."""
    if n < 1:
        raise ValueError(f"need at least one value, got {n}")
    return _null_cdf_cached(n)


def null_sigma(n: int, tie_term: float = 0.0) -> float:
    """Null sd of T+; ``tie_term`` = sum(t**3 - t) over groups of tied |d|."""
    return sqrt(max(n * (n + 1) * (2 * n + 1) / 24.0 - tie_term / 48.0, 0.0))


def uses_exact(n: int, ties: bool) -> bool:
    return not ties and 1 <= n <= SIGNED_RANK_EXACT_MAX


def min_attainable_p(n: int, *, exact: bool = True, sigma: float | None = None) -> float:
    """Smallest two-sided p at n values: 2 / 2^n exact, else that of T+ = N (all positive)."""
    if n < 1:
        return 1.0
    if exact:
        return min(1.0, 2.0 / 2.0**n)
    s = null_sigma(n) if sigma is None else sigma
    if s == 0:
        return 1.0
    total = n * (n + 1) / 2.0
    return min(1.0, 2.0 * normal_cdf(-(total / 2.0 - 0.5) / s))


def critical_count(n: int, alpha: float, *, exact: bool = True, sigma: float | None = None) -> int:
    """Largest c with "min(T+, N - T+) <= c  <=>  p <= alpha"; -1 when p <= alpha is unattainable."""
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    if n < 1:
        return -1
    total = n * (n + 1) // 2
    if exact:
        two_sided = np.minimum(1.0, 2.0 * null_cdf(n))
        return int(np.searchsorted(two_sided[: total // 2 + 1], alpha, side="right")) - 1
    s = null_sigma(n) if sigma is None else sigma
    if s == 0:
        return -1
    return max(-1, floor(total / 2.0 - 0.5 - normal_quantile(1.0 - alpha / 2.0) * s))


def signed_rank_test(d: NDArray[np.float64]) -> SignedRankTest:
    """Two-sided Wilcoxon signed-rank test of ``d`` against 0 (module docstring).

    ``d`` must be 1-D and finite (the caller validates). All zeros (or no values)
    give p = 1.
    """
    used = d[d != 0]
    n = int(used.size)
    if n == 0:
        return SignedRankTest(0.0, 0, 1.0, EXACT, 0.0, False, 1.0)
    magnitudes = np.abs(used)
    ranks = _average_ranks(magnitudes)
    t_plus = float(ranks[used > 0].sum())
    _, groups = np.unique(magnitudes, return_counts=True)
    ties = bool(np.any(groups > 1))
    tie_term = float(np.sum(groups.astype(np.float64) ** 3 - groups))
    sigma = null_sigma(n, tie_term)
    total = n * (n + 1) / 2.0
    if uses_exact(n, ties):
        lower = round(min(t_plus, total - t_plus))
        p = float(min(1.0, 2.0 * null_cdf(n)[lower]))
        return SignedRankTest(t_plus, n, p, EXACT, sigma, ties, min_attainable_p(n))
    if sigma == 0:
        return SignedRankTest(t_plus, n, 1.0, ASYMPTOTIC, sigma, ties, 1.0)
    z = (abs(t_plus - total / 2.0) - 0.5) / sigma
    p = min(1.0, 2.0 * normal_cdf(-max(z, 0.0)))
    return SignedRankTest(t_plus, n, p, ASYMPTOTIC, sigma, ties, min_attainable_p(n, exact=False, sigma=sigma))


def _average_ranks(values: NDArray[np.float64]) -> NDArray[np.float64]:
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    ranks = np.empty(values.size)
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], values.size]
    for start, end in zip(starts, ends, strict=True):
        ranks[order[start:end]] = (start + end + 1) / 2.0
    return ranks


@dataclass(frozen=True)
class WalshInterval:
    """Interval for the centre delta of the log-ratios at ``confidence`` (module docstring).

    estimate: the median of the Walsh averages (Hodges-Lehmann). low/high: NaN when
    ``reached`` is false (the level is unattainable at this n).
    """

    estimate: float
    low: float
    high: float
    confidence: float
    reached: bool

    def ratio_pct(self) -> tuple[float, float]:
        return float(100.0 * np.expm1(self.low)), float(100.0 * np.expm1(self.high))


def walsh_averages(d: NDArray[np.float64]) -> NDArray[np.float64]:
    """The n(n+1)/2 averages (d_i + d_j)/2, i <= j, sorted."""
    i, j = np.triu_indices(d.size)
    return np.sort((d[i] + d[j]) / 2.0)


def walsh_interval(d: NDArray[np.float64], alpha: float, *, exact: bool, sigma: float | None) -> WalshInterval:
    """The inverted signed-rank interval of the module docstring at 1 - alpha.

    ``exact``/``sigma`` come from ``signed_rank_test`` of the same data, so the interval
    and the test agree (exactly without ties).
    """
    averages = walsh_averages(d)
    total = averages.size
    middle = total // 2
    estimate = float(averages[middle] if total % 2 else (averages[middle - 1] + averages[middle]) / 2.0)
    c = critical_count(d.size, alpha, exact=exact, sigma=sigma)
    if c < 0:
        nan = float("nan")
        return WalshInterval(estimate, nan, nan, 1.0 - alpha, False)
    return WalshInterval(estimate, float(averages[c]), float(averages[total - c - 1]), 1.0 - alpha, True)
