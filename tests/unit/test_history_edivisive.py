"""The change-point method (history/edivisive.py) against independent computations: the
energy statistic written out as its definition, scipy's Student t-test, planted steps."""

from __future__ import annotations

from itertools import combinations, product

import numpy as np
import pytest
from scipy import stats

from kbench.history.edivisive import _best_split, change_points, student_p


def energy(x: np.ndarray, y: np.ndarray) -> float:
    """Q(X, Y) of Matteson and James, written out with loops (n = |X|, m = |Y|)."""
    n, m = len(x), len(y)
    cross = sum(abs(a - b) for a, b in product(x, y))
    within_x = sum(abs(a - b) for a, b in combinations(x, 2))
    within_y = sum(abs(a - b) for a, b in combinations(y, 2))
    q = 2 / (n + m) * cross
    if n > 1:
        q -= 2 * m / ((n + m) * (n - 1)) * within_x
    if m > 1:
        q -= 2 * n / ((n + m) * (m - 1)) * within_y
    return q


@pytest.mark.parametrize("seed", range(5))
def test_the_best_split_maximises_the_energy_statistic(seed: int) -> None:
    rng = np.random.default_rng(seed)
    z = rng.normal(10, 1, 17)
    z[9:] += rng.uniform(0, 3)
    every = {(tau, kappa): energy(z[:tau], z[tau:kappa]) for tau in range(1, 17) for kappa in range(tau + 1, 18)}
    best = max(every.values())
    q, tau = _best_split(np.abs(z[:, None] - z[None, :]))
    assert q == pytest.approx(best, rel=1e-9)
    assert any(t == tau and v == pytest.approx(best, rel=1e-9) for (t, _), v in every.items())


@pytest.mark.parametrize(("n", "m"), [(2, 2), (3, 10), (25, 25), (50, 7)])
def test_student_p_is_scipys_pooled_t_test(n: int, m: int) -> None:
    rng = np.random.default_rng(n * 100 + m)
    left, right = rng.normal(0, 1, n), rng.normal(0.7, 1.3, m)
    expected = stats.ttest_ind(left, right, equal_var=True).pvalue
    assert student_p(left, right) == pytest.approx(expected, rel=1e-9)


def test_student_p_with_one_point_on_a_side_and_without_spread() -> None:
    one, many = np.array([5.0]), np.array([1.0, 2.0, 3.0, 2.0])
    # one point adds no sum of squares: t = (5 - 2) / sqrt(s² (1 + 1/4)), s² = 2 / 3, 3 degrees of freedom
    t = 3.0 / np.sqrt(2.0 / 3.0 * 1.25)
    assert student_p(one, many) == pytest.approx(2 * stats.t.sf(t, 3), rel=1e-9)
    assert student_p(np.array([1.0, 1.0]), np.array([1.0, 1.0])) == 1.0
    assert student_p(np.array([1.0, 1.0]), np.array([2.0, 2.0])) == 0.0
    assert student_p(np.array([1.0]), np.array([2.0])) == 1.0


def test_planted_steps_are_found_where_they_are() -> None:
    rng = np.random.default_rng(3)
    values = 100 + rng.normal(0, 0.5, 300)
    values[80:] += 4.0
    values[200:] -= 6.0
    assert [c.index for c in change_points(values)] == [80, 200]
    assert all(c.p_value < 0.001 for c in change_points(values))


def test_noise_rarely_has_a_change_point() -> None:
    # 200 series of 120 normal points: at max_pvalue 0.001 the merged points are rare. Measured
    # 0.047 per series over 300 other series (Otava 0.8, whose t-test takes population SDs:
    # 0.127); 0.1 is 3.5 Poisson SDs of a 200-series mean above 0.047. The seed fixes the data.
    rng = np.random.default_rng(11)
    found = sum(len(change_points(100 + rng.standard_normal(120))) for _ in range(200))
    assert found / 200 < 0.1


def test_short_and_flat_series() -> None:
    assert change_points(np.array([1.0, 2.0])) == []
    assert change_points(np.full(60, 7.0)) == []
    with pytest.raises(ValueError, match="window"):
        change_points(np.arange(10.0), window=1)
