"""Distribution-free CIs of quantiles: ranks by hand, scipy's quantile_test, coverage."""

from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from kbench.stats import median_ci, quantile_ci, quantile_ci_ranks
from kbench.stats.ci import METHOD_MIN_MAX_FALLBACK, METHOD_ORDER_STATISTICS, rank_coverage


def binomial_half_cdfs(n):
    """[P(Bin(n, 1/2) <= k) for k = 0..n], exactly, from binomial coefficients."""
    total, running, cdfs = 2**n, 0, []
    coefficient = 1
    for i in range(n + 1):
        running += coefficient
        cdfs.append(Fraction(running, total))
        coefficient = coefficient * (n - i) // (i + 1)
    return cdfs


def hand_median_ranks(n, confidence=0.95):
    """Largest l with P(B <= l-1) <= alpha/2; u = n + 1 - l by symmetry."""
    tail = (1 - Fraction(str(confidence))) / 2
    cdfs = binomial_half_cdfs(n)
    lower = max((k for k in range(n) if cdfs[k] <= tail), default=-1) + 1
    return lower, n + 1 - lower


@pytest.mark.parametrize(
    ("n", "lower", "upper"),
    [(10, 2, 9), (20, 6, 15), (100, 40, 61)],  # binomial tables, 95 %
)
def test_median_ranks_match_binomial_tables(n, lower, upper):
    assert hand_median_ranks(n) == (lower, upper)
    ranks = quantile_ci_ranks(n, 0.5, confidence=0.95)
    assert (ranks.lower_rank, ranks.upper_rank) == (lower, upper)
    assert ranks.reached


def test_n20_is_x6_x15_with_exact_coverage():
    values = np.arange(1.0, 21.0)[::-1]  # order statistic x_(i) is i
    ci = median_ci(values)
    assert (ci.low, ci.high) == (6.0, 15.0)
    # coverage = 1 - 2 P(B <= 5) = 1 - 2 * 21700 / 2**20
    assert ci.coverage == pytest.approx(1 - 2 * 21700 / 2**20, abs=1e-12)
    assert ci.coverage >= 0.95
    assert ci.method == METHOD_ORDER_STATISTICS
    assert ci.warnings == ()


@pytest.mark.parametrize("n", [*range(6, 60), 101, 1000, 4321])
def test_median_ranks_match_hand_computation(n):
    ranks = quantile_ci_ranks(n, 0.5)
    assert (ranks.lower_rank, ranks.upper_rank) == hand_median_ranks(n)
    lower = ranks.lower_rank
    assert ranks.coverage == pytest.approx(float(1 - 2 * binomial_half_cdfs(n)[lower - 1]), abs=1e-12)


@pytest.mark.parametrize("n", [6, 7, 10, 20, 33, 100, 257, 1000, 5000])
@pytest.mark.parametrize("quantile", [0.5, 0.25, 0.9, 0.99])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_matches_scipy_quantile_test(n, quantile, confidence):
    rng = np.random.default_rng(n)
    values = rng.lognormal(6.0, 0.8, n)
    reference = stats.quantile_test(values, q=1.0, p=quantile).confidence_interval(confidence)
    ci = quantile_ci(values, quantile, confidence=confidence)
    if np.isnan(reference.low) or np.isnan(reference.high):
        # scipy cannot reach the level and returns NaN; we fall back to (min, max)
        assert ci.method == METHOD_MIN_MAX_FALLBACK
        assert (ci.low, ci.high) == (values.min(), values.max())
    else:
        assert (ci.low, ci.high) == (reference.low, reference.high)
        assert ci.coverage >= confidence


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_too_few_samples_fall_back_to_min_max_with_a_warning(n):
    values = np.arange(1.0, n + 1.0)
    ci = median_ci(values)
    assert (ci.low, ci.high) == (1.0, float(n))
    assert ci.method == METHOD_MIN_MAX_FALLBACK
    assert ci.coverage == pytest.approx(1 - 2 * 0.5**n if n > 1 else 0.0)
    assert ci.coverage < 0.95
    assert len(ci.warnings) == 1
    assert ci.warnings[0].startswith("ci-level-unreachable:")
    assert f"n={n}" in ci.warnings[0]


def test_six_samples_are_enough_for_95_percent():
    ci = median_ci([6.0, 1.0, 5.0, 2.0, 4.0, 3.0])
    assert (ci.low, ci.high) == (1.0, 6.0)
    assert ci.coverage == pytest.approx(1 - 2 / 64)
    assert ci.method == METHOD_ORDER_STATISTICS


def test_all_equal_values_give_a_degenerate_interval():
    ci = median_ci([3.0] * 50)
    assert (ci.low, ci.high) == (3.0, 3.0)


def test_coverage_by_simulation():
    rng = np.random.default_rng(7)
    trials, n = 4000, 20
    data = rng.exponential(1.0, size=(trials, n))
    true_median = np.log(2.0)
    ranks = quantile_ci_ranks(n, 0.5)
    ordered = np.sort(data, axis=1)
    covered = (ordered[:, ranks.lower_rank - 1] <= true_median) & (true_median <= ordered[:, ranks.upper_rank - 1])
    # exact coverage 0.9586; 4000 trials give a standard error of ~0.003
    assert covered.mean() == pytest.approx(ranks.coverage, abs=0.015)


def test_rank_coverage_formula():
    # [x_(1), x_(n)] covers unless all n are on one side
    assert rank_coverage(8, 0.5, 1, 8) == pytest.approx(1 - 2 / 256)


def test_large_n_is_fast_and_sane():
    ranks = quantile_ci_ranks(10**7, 0.5)
    half_width = (ranks.upper_rank - ranks.lower_rank) / 2
    # normal approximation: 1.96 * sqrt(n) / 2 ranks either side
    assert half_width == pytest.approx(1.96 * np.sqrt(10**7) / 2, rel=0.01)
    assert 0.95 <= ranks.coverage < 0.9501


@pytest.mark.parametrize("kwargs", [{"confidence": 1.0}, {"confidence": 0.0}, {"quantile": 0.0}, {"quantile": 1.0}])
def test_rejects_bad_levels(kwargs):
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        quantile_ci([1.0, 2.0, 3.0], **kwargs)


@pytest.mark.parametrize("quantile", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("confidence", [0.95, 0.99])
def test_ranks_match_a_search_over_scipys_binomial_cdf(quantile: float, confidence: float) -> None:
    """The ranks from scipy.special's bdtr family equal those found by searching the whole
    CDF of scipy.stats.binom: l - 1 = the largest k with F(k) <= tail, u - 1 = the smallest j
    with 1 - F(j) <= tail (else the (1, n) fallback)."""
    tail = (1 - confidence) / 2
    for n in [*range(1, 200), 1000, 10_007, 1_000_000]:
        k = np.arange(n + 1)
        cdf = stats.binom.cdf(k, n, quantile)
        sf = stats.binom.sf(k, n, quantile)
        below = np.flatnonzero(cdf <= tail)
        above = np.flatnonzero(sf <= tail)
        lower = int(below[-1]) + 1 if below.size else 0
        upper = int(above[0]) + 1 if above.size else n + 1
        ranks = quantile_ci_ranks(n, quantile, confidence=confidence)
        if lower < 1 or upper > n or lower > upper:
            assert (ranks.lower_rank, ranks.upper_rank, ranks.reached) == (1, n, False), n
        else:
            assert (ranks.lower_rank, ranks.upper_rank, ranks.reached) == (lower, upper, True), n
            coverage = stats.binom.cdf(upper - 1, n, quantile) - stats.binom.cdf(lower - 1, n, quantile)
            assert ranks.coverage == pytest.approx(coverage, abs=1e-9)
