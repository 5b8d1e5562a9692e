"""Mann-Whitney p-values, null distribution and the inverted interval, checked against scipy and tables."""

from math import comb

import numpy as np
import pytest
from scipy import stats

from kbench.compare.interval import log_shift_interval
from kbench.compare.ranks import (
    ASYMPTOTIC,
    EXACT,
    critical_count,
    exact_p_values,
    mann_whitney,
    min_attainable_p,
    null_cdf,
)


def scipy_p(base, new, method):
    return stats.mannwhitneyu(new, base, alternative="two-sided", method=method).pvalue


def test_hand_checkable_small_cases():
    # complete separation: p = 2 / C(m + n, m)
    t = mann_whitney(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))
    assert (t.u, t.method, t.ties) == (9.0, EXACT, False)
    assert t.p_value == pytest.approx(2 / 20)
    assert mann_whitney(np.arange(1.0, 5.0), np.arange(5.0, 9.0)).p_value == pytest.approx(2 / 70)
    # one inversion in 3 vs 3: U = 8, P(U0 >= 8) = 2/20 -> p = 0.2
    assert mann_whitney(np.array([1.0, 2.0, 4.0]), np.array([3.0, 5.0, 6.0])).p_value == pytest.approx(0.2)
    assert min_attainable_p(3, 3) == pytest.approx(0.1)
    assert min_attainable_p(5, 5) == pytest.approx(2 / 252)


def test_null_distribution_counts_match_hand_enumeration():
    # sizes 2 and 3: the C(5, 2) = 10 orderings, counted by hand, give U = 0..6 with counts 1,1,2,2,2,1,1
    counts = np.diff(np.concatenate([[0.0], null_cdf(2, 3)])) * comb(5, 2)
    assert counts == pytest.approx([1, 1, 2, 2, 2, 1, 1])
    assert null_cdf(3, 2) == pytest.approx(null_cdf(2, 3))


@pytest.mark.parametrize(("m", "n"), [(3, 3), (4, 7), (5, 5), (8, 8), (10, 12), (20, 20), (9, 30)])
def test_exact_p_values_match_scipy_exact(m, n):
    rng = np.random.default_rng(m * 100 + n)
    for _ in range(20):
        base, new = rng.normal(size=m), rng.normal(0.5, size=n)
        t = mann_whitney(base, new)
        assert t.method == EXACT
        assert t.p_value == pytest.approx(scipy_p(base, new, "exact"), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(("m", "n"), [(5, 5), (12, 9), (60, 70)])
def test_ties_and_large_samples_use_the_asymptotic_p_of_scipy(m, n):
    rng = np.random.default_rng(7)
    base = np.round(rng.normal(10, 1, size=m))  # integer values: many ties
    new = np.round(rng.normal(10.5, 1, size=n))
    t = mann_whitney(base, new)
    assert t.method == ASYMPTOTIC and t.ties
    assert t.p_value == pytest.approx(scipy_p(base, new, "asymptotic"), rel=1e-9)
    if m > 50:
        base, new = rng.normal(size=m), rng.normal(size=n)
        t = mann_whitney(base, new)
        assert (t.method, t.ties) == (ASYMPTOTIC, False)
        assert t.p_value == pytest.approx(scipy_p(base, new, "asymptotic"), rel=1e-9)


def test_all_equal_gives_p_one():
    t = mann_whitney(np.full(5, 3.0), np.full(5, 3.0))
    assert t.p_value == 1.0


def test_critical_count_matches_the_published_table_and_the_test():
    # Two-sided 5% critical values of U (Mann-Whitney tables): n1 = n2 = 5 -> 2, 8 -> 13, 10 -> 23
    assert critical_count(5, 5, 0.05) == 2
    assert critical_count(8, 8, 0.05) == 13
    assert critical_count(10, 10, 0.05) == 23
    assert critical_count(3, 3, 0.05) == -1  # p = 0.1 at best
    # duality: p <= alpha exactly when min(U, mn - U) <= c
    for m, n in [(5, 5), (6, 9)]:
        c = critical_count(m, n, 0.05)
        p = exact_p_values(np.arange(m * n + 1), m, n)
        lower = np.minimum(np.arange(m * n + 1), m * n - np.arange(m * n + 1))
        assert np.array_equal(p <= 0.05, lower <= c)


def test_interval_is_the_moses_interval_of_the_pairwise_differences():
    log_base = np.log(np.array([100.0, 103.0, 98.0, 101.0, 99.5]))
    log_new = np.log(np.array([104.0, 106.5, 102.0, 105.0, 103.5]))
    t = mann_whitney(log_base, log_new)
    ci = log_shift_interval(log_base, log_new, t, alpha=0.05)
    d = np.sort((log_new[:, None] - log_base[None, :]).ravel())
    assert (ci.low, ci.high) == (d[2], d[22])  # 3rd smallest and 3rd largest (c = 2)
    assert (ci.lower_rank, ci.upper_rank) == (3, 23)
    assert ci.estimate == pytest.approx(np.median(d))
    assert ci.reached


def test_interval_ends_are_where_scipy_starts_to_reject():
    rng = np.random.default_rng(11)
    log_base, log_new = rng.normal(0, 0.02, 9), rng.normal(0.01, 0.02, 11)
    t = mann_whitney(log_base, log_new)
    ci = log_shift_interval(log_base, log_new, t, alpha=0.05)
    eps = 1e-9
    for inside in (ci.low + eps, ci.high - eps, ci.estimate):
        assert scipy_p(log_base, log_new - inside, "exact") > 0.05
    for outside in (ci.low - eps, ci.high + eps):
        assert scipy_p(log_base, log_new - outside, "exact") <= 0.05


def test_interval_unreachable_at_three_trials():
    a = np.log(np.array([1.0, 2.0, 3.0]))
    ci = log_shift_interval(a, a + 0.5, mann_whitney(a, a + 0.5), alpha=0.05)
    assert not ci.reached and np.isnan(ci.low) and np.isnan(ci.high)


def test_interval_coverage_for_skewed_data_is_at_least_the_level():
    rng = np.random.default_rng(5)
    experiments, misses, shift = 2000, 0, 0.03
    for _ in range(experiments):
        base = rng.gamma(2.0, 0.01, 8)  # skewed noise on the log scale
        new = rng.gamma(2.0, 0.01, 8) + shift
        ci = log_shift_interval(base, new, mann_whitney(base, new), alpha=0.05)
        misses += not ci.low <= shift <= ci.high
    # exact coverage of c = 13 at 8 vs 8 is 1 - 2 P(U0 <= 13) = 0.9503; 99% binomial upper bound
    bound = 0.05 + 2.576 * np.sqrt(0.05 * 0.95 / experiments)
    assert misses / experiments <= bound
