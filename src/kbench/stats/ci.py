"""Distribution-free confidence intervals for a quantile, from order statistics.

Definition. For n samples with order statistics x_(1) <= ... <= x_(n) (1-based
ranks) and the population p-quantile xi_p of a continuous distribution, the
number B of samples below xi_p is Binomial(n, p), hence

    P(x_(l) <= xi_p <= x_(u)) = P(l <= B <= u - 1) = F(u - 1) - F(l - 1)

with F the Binomial(n, p) CDF. For confidence level c and alpha = 1 - c the
interval is equal-tailed:

    l = the largest rank with  F(l - 1)      <= alpha / 2
    u = the smallest rank with 1 - F(u - 1)  <= alpha / 2

so each tail holds at most alpha/2 and the exact coverage F(u-1) - F(l-1) is
>= c (it is reported; it exceeds c because the binomial is discrete). For the
median at 95 %: n=10 -> (x_(2), x_(9)), n=20 -> (x_(6), x_(15)),
n=100 -> (x_(40), x_(61)). These are the same ranks as
``scipy.stats.quantile_test(...).confidence_interval()`` (two-sided).

With ties or discrete data the closed interval covers at least as often
(the bound stays valid, conservatively).

Too few samples. When no rank satisfies a tail condition (for the median at
95 %: n <= 5), the interval falls back to (min, max) = (x_(1), x_(n)), whose
coverage 1 - p**n - (1 - p)**n is below the level; the result then carries a
warning naming the achieved coverage. For n = 1 this is (x, x) with coverage 0.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from numpy.typing import ArrayLike

from kbench.stats.percentiles import order_statistics
from kbench.stats.thresholds import DEFAULT_CONFIDENCE
from kbench.stats.validate import as_samples

METHOD_ORDER_STATISTICS = "binomial order statistics (equal-tailed, distribution-free)"
METHOD_MIN_MAX_FALLBACK = "min-max fallback (too few samples for the level)"
WARNING_CI_UNREACHABLE = "ci-level-unreachable"


@dataclass(frozen=True)
class QuantileCI:
    """A confidence interval [low, high] for the population ``quantile``.

    ``lower_rank``/``upper_rank`` are the 1-based order statistics used,
    ``level`` the requested confidence, ``coverage`` the exact coverage of those
    ranks for continuous data, ``method`` one of the METHOD_* strings.
    """

    low: float
    high: float
    quantile: float
    level: float
    coverage: float
    lower_rank: int
    upper_rank: int
    method: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CIRanks:
    """The 1-based ranks chosen for n samples (no sample values involved)."""

    lower_rank: int
    upper_rank: int
    coverage: float
    reached: bool  # False: (1, n) fallback, coverage below the level


def _check_level(quantile: float, confidence: float) -> None:
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must lie strictly between 0 and 1, got {quantile!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")


class _Binomial:
    """Binomial(n, p) by scipy.special's ``bdtr`` family (scipy.stats costs about three times
    as much to import: a third of a second here, for a command that summarises a few samples).

    cdf(k) = P(X <= k) and sf(k) = P(X > k) for whole k (0 / 1 outside [0, n)); ppf(q) and
    isf(q) are starting points for the callers' exact searches (``bdtrik`` inverts the CDF
    continuously, the result rounded up and clipped to [0, n]).
    """

    def __init__(self, n: int, p: float):
        from scipy import special  # here: most kbench commands never compute an interval

        self.n, self.p, self._special = n, p, special

    def cdf(self, k: int) -> float:
        if k < 0:
            return 0.0
        if k >= self.n:
            return 1.0
        return float(self._special.bdtr(k, self.n, self.p))

    def sf(self, k: int) -> float:
        if k < 0:
            return 1.0
        if k >= self.n:
            return 0.0
        return float(self._special.bdtrc(k, self.n, self.p))

    def ppf(self, q: float) -> int:
        found = float(self._special.bdtrik(q, self.n, self.p))
        return min(max(math.ceil(found), 0), self.n) if math.isfinite(found) else 0

    def isf(self, q: float) -> int:
        return self.ppf(1.0 - q)


def _binomial(n: int, p: float) -> _Binomial:
    return _Binomial(n, p)


def rank_coverage(n: int, quantile: float, lower_rank: int, upper_rank: int) -> float:
    """Exact coverage F(u - 1) - F(l - 1) of [x_(l), x_(u)] for Binomial(n, quantile)."""
    binomial = _binomial(n, quantile)
    return float(binomial.cdf(upper_rank - 1) - binomial.cdf(lower_rank - 1))


@functools.lru_cache(maxsize=4096)
def quantile_ci_ranks(n: int, quantile: float = 0.5, *, confidence: float = DEFAULT_CONFIDENCE) -> CIRanks:
    """Choose the ranks (l, u) of the module docstring for n samples.

    Falls back to (1, n) with ``reached=False`` when either tail condition has
    no solution. Cost is O(1) in n (a few binomial CDF evaluations, about a millisecond
    with scipy's frozen distributions): the ranks depend on (n, quantile, confidence)
    only, and are remembered, since an import of many runs of equal size asks for the
    same ones thousands of times.
    """
    if n < 1:
        raise ValueError(f"need at least one sample, got n={n}")
    _check_level(quantile, confidence)
    tail = (1.0 - confidence) / 2.0
    binomial = _binomial(n, quantile)

    # Largest k with F(k) <= tail; ppf gives the smallest k with F(k) >= tail,
    # so step down while F(k) > tail (at most a step or two, for rounding).
    k = int(binomial.ppf(tail))
    while k >= 0 and binomial.cdf(k) > tail:
        k -= 1
    while k + 1 <= n and binomial.cdf(k + 1) <= tail:
        k += 1
    lower_rank = k + 1  # F(l - 1) <= tail

    # Smallest j with 1 - F(j) = sf(j) <= tail; upper rank u = j + 1.
    j = int(binomial.isf(tail))
    while j > 0 and binomial.sf(j - 1) <= tail:
        j -= 1
    while j <= n and binomial.sf(j) > tail:
        j += 1
    upper_rank = j + 1

    if lower_rank < 1 or upper_rank > n or lower_rank > upper_rank:
        return CIRanks(1, n, rank_coverage(n, quantile, 1, n), reached=False)
    return CIRanks(lower_rank, upper_rank, rank_coverage(n, quantile, lower_rank, upper_rank), True)


def ci_from_ranks_warning(ranks: CIRanks, n: int, quantile: float, confidence: float) -> str:
    """The warning text for a fallback interval (used by ``quantile_ci`` and summaries)."""
    return (
        f"{WARNING_CI_UNREACHABLE}: n={n} samples are too few for a "
        f"{confidence:.0%} distribution-free interval of the {quantile:g}-quantile; "
        f"reporting (min, max), whose coverage is only {ranks.coverage:.1%}"
    )


def quantile_ci(values: ArrayLike, quantile: float = 0.5, *, confidence: float = DEFAULT_CONFIDENCE) -> QuantileCI:
    """Distribution-free CI of the population ``quantile`` (see module docstring)."""
    samples = as_samples(values)
    n = samples.size
    ranks = quantile_ci_ranks(n, quantile, confidence=confidence)
    low, high = order_statistics(samples, [ranks.lower_rank - 1, ranks.upper_rank - 1])
    if ranks.reached:
        return QuantileCI(
            float(low),
            float(high),
            quantile,
            confidence,
            ranks.coverage,
            ranks.lower_rank,
            ranks.upper_rank,
            METHOD_ORDER_STATISTICS,
        )
    return QuantileCI(
        float(low),
        float(high),
        quantile,
        confidence,
        ranks.coverage,
        ranks.lower_rank,
        ranks.upper_rank,
        METHOD_MIN_MAX_FALLBACK,
        (ci_from_ranks_warning(ranks, n, quantile, confidence),),
    )


def median_ci(values: ArrayLike, *, confidence: float = DEFAULT_CONFIDENCE) -> QuantileCI:
    """Distribution-free CI of the population median: ``quantile_ci(values, 0.5)``."""
    return quantile_ci(values, 0.5, confidence=confidence)
