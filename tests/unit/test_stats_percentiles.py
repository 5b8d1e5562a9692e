"""Type-7 quantiles against numpy and R-documented / hand-computed values."""

import numpy as np
import pytest

from kbench.stats import median, percentiles, quantiles
from kbench.stats.percentiles import interpolate, type7_positions

PROBABILITIES = [0.0, 0.001, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 10, 11, 100, 1001, 12345])
def test_matches_numpy_linear(n):
    rng = np.random.default_rng(n)
    values = rng.lognormal(7.0, 1.0, n)
    expected = np.quantile(values, PROBABILITIES, method="linear")
    np.testing.assert_allclose(quantiles(values, PROBABILITIES), expected, rtol=1e-12, atol=0)


def test_percentiles_matches_np_percentile_with_ties():
    values = np.array([5, 1, 1, 2, 2, 2, 9, 9, 3, 3], dtype=float)
    percents = [0, 10, 33.3, 50, 66.7, 90, 99.9, 100]
    np.testing.assert_allclose(percentiles(values, percents), np.percentile(values, percents), rtol=1e-12)


def test_r_default_type7_values():
    # R: quantile(1:10, c(.1, .25, .5, .9)) -> 1.90 3.25 5.50 9.10
    np.testing.assert_allclose(quantiles(np.arange(1, 11), [0.1, 0.25, 0.5, 0.9]), [1.9, 3.25, 5.5, 9.1])


def test_hand_computed_interpolation():
    # sorted 1, 3, 7, 15; h = 3 * 0.3 = 0.9 -> 1 + 0.9 * (3 - 1) = 2.8
    assert quantiles([7, 1, 15, 3], [0.3])[0] == pytest.approx(2.8)


def test_median_odd_and_even():
    assert median([3, 1, 2]) == 2.0
    assert median([4, 1, 3, 2]) == 2.5
    assert median([42]) == 42.0


def test_extremes_are_min_and_max():
    values = [5.0, 2.0, 9.0, 4.0]
    assert quantiles(values, [0.0, 1.0]).tolist() == [2.0, 9.0]


def test_single_value_gives_that_value_everywhere():
    assert quantiles([7.5], PROBABILITIES).tolist() == [7.5] * len(PROBABILITIES)


def test_input_is_not_modified():
    values = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    quantiles(values, [0.5, 0.9])
    assert values.tolist() == [3.0, 1.0, 2.0, 5.0, 4.0]


@pytest.mark.parametrize("bad", [-0.1, 1.1, float("nan")])
def test_rejects_probabilities_outside_unit_interval(bad):
    with pytest.raises(ValueError, match=r"probabilities must lie in \[0, 1\]"):
        quantiles([1.0, 2.0], [0.5, bad])


def test_positions_are_floor_and_ceil_of_h():
    lower, upper, fraction = type7_positions(11, [0.0, 0.25, 0.95, 1.0])
    assert lower.tolist() == [0, 2, 9, 10]
    assert upper.tolist() == [1, 3, 10, 10]
    np.testing.assert_allclose(fraction, [0.0, 0.5, 0.5, 0.0])


def test_interpolation_stays_between_its_ends():
    a = np.array([1.0, 1e300, 0.1])
    b = np.array([1.0 + 2**-52, 1e300, 0.7])
    result = interpolate(a, b, np.array([1.0, 0.3, 0.999999]))
    assert result[0] == b[0] and result[1] == 1e300
    assert a[2] <= result[2] <= b[2]
