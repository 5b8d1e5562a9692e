"""The signed-rank test and its interval, against scipy and against the test itself."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from kbench.compare.signed_ranks import (
    ASYMPTOTIC,
    EXACT,
    critical_count,
    min_attainable_p,
    null_cdf,
    signed_rank_test,
    walsh_averages,
    walsh_interval,
)


@pytest.mark.parametrize("n", [1, 2, 5, 10, 30, 50])
def test_exact_p_values_equal_scipy(n: int) -> None:
    rng = np.random.default_rng(n)
    for shift in (0.0, 0.005, 0.02):
        d = rng.normal(shift, 0.01, n)
        ours = signed_rank_test(d)
        theirs = stats.wilcoxon(d, method="exact")
        assert ours.method == EXACT
        assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-12)
        assert min(ours.t_plus, n * (n + 1) / 2 - ours.t_plus) == theirs.statistic


@pytest.mark.parametrize("n", [51, 80, 300])
def test_large_samples_use_the_normal_approximation_as_scipy_does(n: int) -> None:
    rng = np.random.default_rng(n)
    d = rng.normal(0.002, 0.01, n)
    ours = signed_rank_test(d)
    assert ours.method == ASYMPTOTIC
    assert ours.p_value == pytest.approx(stats.wilcoxon(d, method="approx", correction=True).pvalue, rel=1e-9)


def test_ties_and_zeros_follow_wilcoxons_rule() -> None:
    d = np.array([0.0, 0.01, 0.01, -0.01, 0.02, 0.03, 0.03, 0.03, 0.04, -0.02, 0.05, 0.0])
    ours = signed_rank_test(d)
    theirs = stats.wilcoxon(d, zero_method="wilcox", method="approx", correction=True)
    assert ours.n_used == 10 and ours.ties and ours.method == ASYMPTOTIC
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9)
    assert signed_rank_test(np.zeros(5)).p_value == 1.0


def test_null_distribution_is_the_count_of_subsets_with_each_sum() -> None:
    n = 6
    sums = np.zeros(n * (n + 1) // 2 + 1)
    for mask in range(2**n):
        sums[sum(k + 1 for k in range(n) if mask >> k & 1)] += 1
    assert np.allclose(null_cdf(n), np.cumsum(sums) / 2**n)
    assert min_attainable_p(6) == pytest.approx(2 / 64)
    assert critical_count(5, 0.05) == -1  # 2/32 = 0.0625 > 0.05
    assert critical_count(6, 0.05) == 0


@pytest.mark.parametrize(("n", "alpha"), [(8, 0.05), (20, 0.05), (40, 0.01), (120, 0.05)])
def test_interval_ends_are_where_the_test_starts_to_reject(n: int, alpha: float) -> None:
    rng = np.random.default_rng(n)
    d = rng.normal(0.01, 0.02, n)
    test = signed_rank_test(d)
    interval = walsh_interval(d, alpha, exact=test.method == EXACT, sigma=test.sigma)
    assert interval.reached and interval.low < interval.estimate < interval.high
    eps = 1e-9
    for end, outside in ((interval.low, -eps), (interval.high, eps)):
        assert signed_rank_test(d - (end + outside)).p_value <= alpha
        assert signed_rank_test(d - (end - outside)).p_value > alpha


def test_walsh_averages_and_the_estimate() -> None:
    d = np.array([1.0, 3.0, 8.0])
    assert list(walsh_averages(d)) == [1.0, 2.0, 3.0, 4.5, 5.5, 8.0]
    interval = walsh_interval(d, 0.05, exact=True, sigma=None)
    assert interval.estimate == pytest.approx(3.75) and not interval.reached
    assert math.isnan(interval.low) and math.isnan(interval.high)
