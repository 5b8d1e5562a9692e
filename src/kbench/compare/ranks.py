"""The two-sided Mann-Whitney U test of two sets of trials, and its null distribution.

Definitions (base x_1..x_m, new y_1..y_n):

    U = #{(i, j): y_j > x_i} + 0.5 * #{(i, j): y_j = x_i}

(scipy's ``mannwhitneyu(new, base).statistic``). Under H0 (both sides drawn from
one continuous distribution) U has mean mn/2 and is symmetric about it.

Two-sided p-value, by one of two methods:

- "exact" when there are no ties anywhere in the pooled trials and both sides
  hold at most ``MWU_EXACT_MAX_TRIALS`` trials:
  p = min(1, 2 * P(U0 <= min(U, mn - U))) with U0 the exact null distribution
  (counted by the recursion in ``null_cdf``);
- "asymptotic" otherwise: z = (max(U, mn - U) - mn/2 - 0.5) / sigma and
  p = min(1, 2 * (1 - Phi(z))), with the tie-corrected
  sigma**2 = mn/12 * ((N + 1) - sum(t**3 - t) / (N (N - 1))), N = m + n, t the
  sizes of the groups of equal values (continuity correction 0.5).

Both equal ``scipy.stats.mannwhitneyu(new, base, method=<that method>).pvalue``
(checked in tests); this module exists so that the same p-value can be
computed for thousands of simulated experiments at once and inverted into an
interval (``critical_count``).

Minimum attainable p: with the exact method the most extreme arrangement (all
new above all base) has p = 2 / C(m + n, m): 0.1 at 3 vs 3, 0.029 at 4 vs 4,
0.0079 at 5 vs 5. When that exceeds alpha no data can be called significant.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import comb, floor, sqrt

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.compare.thresholds import MWU_EXACT_MAX_TRIALS
from kbench.stats.distributions import normal_cdf, normal_quantile

SCALAR_TAILS_MAX = 64
"""Up to this many p-values at once are computed value by value (``normal_cdf``), more by
scipy.special's ``ndtr`` ufunc (the simulations of ``boundaries``): a command that judges
a few verdicts does not import scipy.special (kbench.stats.distributions)."""

EXACT = "exact"
ASYMPTOTIC = "asymptotic"


@dataclass(frozen=True)
class RankTest:
    """Outcome of ``mann_whitney``.

    u: U of new against base (module docstring). p_value: two-sided.
    method: EXACT or ASYMPTOTIC. sigma: the (tie-corrected) null standard deviation of U.
    ties: some values are equal in the pooled trials.
    min_attainable_p: the smallest p-value this method can give at these sizes
    (and, for ASYMPTOTIC, this sigma).
    """

    u: float
    p_value: float
    method: str
    sigma: float
    ties: bool
    min_attainable_p: float


@lru_cache(maxsize=256)
def _null_cdf_cached(m: int, n: int) -> NDArray[np.float64]:
    # count[j][u] = number of orderings of i base and j new values (all distinct)
    # whose U equals u. Recursion on the largest value: if it is a new value it
    # beats all i base values (u - i from (i, j - 1)); if it is a base value it
    # adds nothing (u from (i - 1, j)). All terms are non-negative: no cancellation.
    previous: list[NDArray[np.float64]] = [np.ones(1) for _ in range(n + 1)]  # i = 0
    for i in range(1, m + 1):
        current: list[NDArray[np.float64]] = [np.ones(1)]  # j = 0
        for j in range(1, n + 1):
            counts = np.zeros(i * j + 1)
            counts[: (i - 1) * j + 1] += previous[j]
            counts[i : i + i * (j - 1) + 1] += current[j - 1]
            current.append(counts)
        previous = current
    counts = previous[n]
    cdf: NDArray[np.float64] = np.cumsum(counts) / counts.sum()
    cdf.setflags(write=False)
    return cdf


def null_cdf(m: int, n: int) -> NDArray[np.float64]:
    """[P(U0 <= u) for u = 0 .. m*n] under H0 for continuous data (read-only, cached)."""
    if m < 1 or n < 1:
        raise ValueError(f"need at least one value per side, got {m} and {n}")
    return _null_cdf_cached(min(m, n), max(m, n))


def uses_exact(m: int, n: int, ties: bool) -> bool:
    """Whether the exact method applies (module docstring)."""
    return not ties and max(m, n) <= MWU_EXACT_MAX_TRIALS


def null_sigma(m: int, n: int, tie_term: float = 0.0) -> float:
    """Null standard deviation of U; ``tie_term`` = sum(t**3 - t) over groups of ties."""
    total = m + n
    return sqrt(m * n / 12.0 * ((total + 1) - tie_term / (total * (total - 1))))


def exact_p_values(u: ArrayLike, m: int, n: int) -> NDArray[np.float64]:
    """Exact two-sided p-values for integer U values (vectorised; no ties assumed)."""
    counts = np.asarray(u, dtype=np.float64)
    lower_tail = np.minimum(counts, m * n - counts).astype(np.intp)
    p: NDArray[np.float64] = np.minimum(1.0, 2.0 * null_cdf(m, n)[lower_tail])
    return p


def asymptotic_p_values(u: ArrayLike, m: int, n: int, sigma: float) -> NDArray[np.float64]:
    """Normal-approximation two-sided p-values with continuity correction (vectorised)."""
    counts = np.asarray(u, dtype=np.float64)
    numerator = np.maximum(counts, m * n - counts) - m * n / 2.0 - 0.5
    if sigma == 0:  # every value equal: no evidence at all
        return np.ones_like(counts)
    z = -numerator / sigma
    if z.size <= SCALAR_TAILS_MAX:
        tails = np.array([normal_cdf(float(value)) for value in z.ravel()]).reshape(z.shape)
    else:
        from scipy import special

        tails = special.ndtr(z)
    p: NDArray[np.float64] = np.clip(2.0 * tails, 0.0, 1.0)
    return p


def p_values(u: ArrayLike, m: int, n: int) -> NDArray[np.float64]:
    """Two-sided p-values of tie-free U values at sizes (m, n), by the module's method rule."""
    if uses_exact(m, n, ties=False):
        return exact_p_values(u, m, n)
    return asymptotic_p_values(u, m, n, null_sigma(m, n))


def min_attainable_p(m: int, n: int, *, exact: bool = True, sigma: float | None = None) -> float:
    """Smallest two-sided p-value at sizes (m, n): 2 / C(m + n, m) for the exact method.

    For the asymptotic method it is the p-value of complete separation
    (U = m*n) with the given (default: tie-free) sigma.
    """
    if m < 1 or n < 1:
        return 1.0
    if exact:
        return min(1.0, 2.0 / comb(m + n, m))
    s = null_sigma(m, n) if sigma is None else sigma
    return float(asymptotic_p_values([m * n], m, n, s)[0])


def critical_count(m: int, n: int, alpha: float, *, exact: bool = True, sigma: float | None = None) -> int:
    """Largest c with "min(U, mn - U) <= c  <=>  p <= alpha"; -1 when p <= alpha is unattainable.

    Exact: the largest c with min(1, 2 P(U0 <= c)) <= alpha (the same arithmetic as
    ``exact_p_values``, so the duality with the test is exact). Asymptotic:
    floor(mn/2 - 0.5 - z sigma) with z = Phi^-1(1 - alpha/2).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")
    if exact:
        two_sided = np.minimum(1.0, 2.0 * null_cdf(m, n))
        half = (m * n) // 2
        return int(np.searchsorted(two_sided[: half + 1], alpha, side="right")) - 1
    s = null_sigma(m, n) if sigma is None else sigma
    if s == 0:
        return -1
    return max(-1, floor(m * n / 2.0 - 0.5 - normal_quantile(1.0 - alpha / 2.0) * s))


def u_statistic(base: NDArray[np.float64], new: NDArray[np.float64]) -> float:
    """U of new against base (ties count one half)."""
    ordered = np.sort(base)
    below = np.searchsorted(ordered, new, side="left")
    below_or_equal = np.searchsorted(ordered, new, side="right")
    return float(np.sum(below + below_or_equal) / 2.0)


def mann_whitney(base: NDArray[np.float64], new: NDArray[np.float64]) -> RankTest:
    """Two-sided Mann-Whitney U test of new against base (module docstring).

    Inputs must be 1-D, non-empty and NaN-free (the caller validates).
    """
    m, n = base.size, new.size
    u = u_statistic(base, new)
    _, group_sizes = np.unique(np.concatenate([base, new]), return_counts=True)
    ties = bool(np.any(group_sizes > 1))
    tie_term = float(np.sum(group_sizes.astype(np.float64) ** 3 - group_sizes))
    sigma = null_sigma(m, n, tie_term) if m + n > 1 else 0.0
    if uses_exact(m, n, ties):
        p = float(exact_p_values([u], m, n)[0])
        return RankTest(u, p, EXACT, sigma, ties, min_attainable_p(m, n))
    p = float(asymptotic_p_values([u], m, n, sigma)[0])
    return RankTest(u, p, ASYMPTOTIC, sigma, ties, min_attainable_p(m, n, exact=False, sigma=sigma))
