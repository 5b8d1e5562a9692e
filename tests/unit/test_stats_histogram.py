"""Histograms, ECDF and compact CDF against numpy/scipy and hand cases."""

from itertools import pairwise

import numpy as np
import pytest
from scipy import stats

from kbench.stats import cdf_at, compact_cdf, ecdf, linear_histogram, log2_histogram
from kbench.stats.histogram import freedman_diaconis_bins, value_step
from kbench.stats.thresholds import HISTOGRAM_MAX_AUTO_BINS


def test_linear_histogram_matches_numpy():
    values = np.random.default_rng(1).lognormal(6.0, 0.5, 5000)
    histogram = linear_histogram(values, bins=17)
    counts, edges = np.histogram(values, bins=17)
    np.testing.assert_allclose(histogram.edges, edges, rtol=1e-12)
    assert histogram.counts.tolist() == counts.tolist()
    assert histogram.counts.sum() == values.size
    assert histogram.method == "fixed"


def test_maximum_lands_in_the_last_bin():
    histogram = linear_histogram([0.0, 1.0, 2.0, 3.0, 4.0], bins=2, quantized=False)
    assert histogram.edges.tolist() == [0.0, 2.0, 4.0]
    assert histogram.counts.tolist() == [2, 3]


def test_quantized_values_get_bins_of_whole_steps_centred_off_the_values():
    # getppid per call at batch 16 on a timer that steps by 10.01 ns: values 0.6256 ns apart.
    # Plain bins 1.35 ns wide (2.15 steps) would hold 2 or 3 possible values in turn.
    step = 10.01 / 16
    grid = 118.9 + step * np.arange(44)
    values = np.repeat(grid, 50)
    histogram = linear_histogram(values, bins=20)
    width = np.diff(histogram.edges)
    assert np.allclose(width, 3 * step)  # 43 steps / 20 bins = 2.15 steps, rounded up
    assert histogram.edges[0] == pytest.approx(grid[0] - step / 2)
    held = [int(np.count_nonzero((grid >= a) & (grid < b))) for a, b in pairwise(histogram.edges)]
    assert held == [3] * 14 + [2]  # 44 = 14 * 3 + 2: every bin but the last holds 3 possible values
    assert histogram.counts.tolist() == [50 * h for h in held]
    assert histogram.counts.sum() == values.size


def test_a_step_is_found_only_when_every_value_lies_on_it():
    step = 10.01 / 16
    on_grid = 118.9 + step * np.random.default_rng(3).integers(0, 400, 20_000)
    assert value_step(on_grid) == pytest.approx(step, rel=1e-9)
    assert value_step(np.random.default_rng(4).lognormal(5, 0.2, 20_000)) is None
    off_the_grid = np.append(on_grid, on_grid[0] + 0.37 * step)
    assert value_step(off_the_grid) is None
    assert value_step([1.0, 2.0]) is None  # two values say nothing about a step
    # past the probe: a value off the first 100,000 values' grid is still seen
    late = np.concatenate([118.9 + 2 * step * (np.arange(100_000) % 50), [118.9 + step]])
    assert value_step(late) == pytest.approx(step, rel=1e-9)


def test_freedman_diaconis_matches_numpy_when_not_capped():
    values = np.random.default_rng(2).normal(100.0, 5.0, 4000)
    expected = len(np.histogram_bin_edges(values, bins="fd")) - 1
    assert freedman_diaconis_bins(values) == expected
    assert linear_histogram(values).counts.size == expected
    assert linear_histogram(values).method == "freedman-diaconis"


def test_automatic_bins_are_capped_for_heavy_tails():
    values = np.r_[np.random.default_rng(3).normal(100.0, 1.0, 10_000), 1e7]
    assert freedman_diaconis_bins(values) == HISTOGRAM_MAX_AUTO_BINS


def test_zero_iqr_falls_back_to_sturges():
    values = np.r_[np.full(100, 5.0), 6.0, 7.0]  # IQR 0, range 2
    assert freedman_diaconis_bins(values) == int(np.ceil(np.log2(102))) + 1


def test_all_equal_values_give_one_unit_bin():
    histogram = linear_histogram([3.0, 3.0, 3.0])
    assert histogram.edges.tolist() == [2.5, 3.5]
    assert histogram.counts.tolist() == [3]


def test_rejects_zero_bins():
    with pytest.raises(ValueError, match="bins must be at least 1"):
        linear_histogram([1.0, 2.0], bins=0)


def test_log2_histogram_hand_case():
    histogram = log2_histogram([1, 2, 3, 4, 7, 8, 0, 0.75])
    assert histogram.exponents.tolist() == [-1, 0, 1, 2, 3]
    assert histogram.edges.tolist() == [0.5, 1, 2, 4, 8, 16]
    # [0.5,1): 0.75  [1,2): 1  [2,4): 2,3  [4,8): 4,7  [8,16): 8
    assert histogram.counts.tolist() == [1, 1, 2, 2, 1]
    assert histogram.zeros == 1


def test_log2_histogram_keeps_empty_bins_and_exact_powers():
    histogram = log2_histogram([1024.0, 1023.999, 2.0**20])
    assert histogram.exponents[0] == 9 and histogram.exponents[-1] == 20
    assert histogram.counts.tolist() == [1, 1] + [0] * 9 + [1]
    assert histogram.counts.sum() == 3


def test_log2_histogram_of_zeros():
    histogram = log2_histogram([0.0, 0.0])
    assert histogram.counts.size == 0 and histogram.zeros == 2


def test_log2_histogram_matches_numpy_on_random_data():
    values = np.random.default_rng(4).lognormal(8.0, 2.0, 10_000)
    histogram = log2_histogram(values)
    counts, _ = np.histogram(values, bins=histogram.edges)
    assert histogram.counts.tolist() == counts.tolist()


def test_ecdf_matches_scipy():
    values = np.random.default_rng(5).integers(0, 20, 300).astype(float)  # with ties
    mine = ecdf(values)
    reference = stats.ecdf(values).cdf
    np.testing.assert_array_equal(mine.values, reference.quantiles)
    np.testing.assert_allclose(mine.probabilities, reference.probabilities, rtol=1e-12)


def test_ecdf_hand_case():
    result = ecdf([3.0, 1.0, 3.0, 2.0])
    assert result.values.tolist() == [1.0, 2.0, 3.0]
    assert result.probabilities.tolist() == [0.25, 0.5, 1.0]


def test_cdf_at_is_right_continuous():
    values = [1.0, 2.0, 2.0, 4.0]
    assert cdf_at(values, [0.0, 1.0, 1.5, 2.0, 3.9, 4.0, np.inf]).tolist() == [0, 0.25, 0.25, 0.75, 0.75, 1, 1]


def test_cdf_at_matches_scipy_evaluate():
    values = np.random.default_rng(6).exponential(10.0, 500)
    points = np.linspace(0.0, 60.0, 31)
    np.testing.assert_allclose(cdf_at(values, points), stats.ecdf(values).cdf.evaluate(points), rtol=1e-12)


def test_cdf_at_rejects_nan_points():
    with pytest.raises(ValueError, match="NaN"):
        cdf_at([1.0], [np.nan])


def test_compact_cdf_points_are_type7_quantiles():
    values = np.random.default_rng(7).lognormal(6.0, 1.0, 1000)
    cdf = compact_cdf(values, points=11)
    np.testing.assert_allclose(cdf.probabilities, np.linspace(0.0, 1.0, 11))
    np.testing.assert_allclose(cdf.values, np.quantile(values, cdf.probabilities), rtol=1e-12)
    assert cdf.values[0] == values.min() and cdf.values[-1] == values.max()
    assert compact_cdf(values).values.size == 101


def test_compact_cdf_needs_two_points():
    with pytest.raises(ValueError, match="at least 2 points"):
        compact_cdf([1.0, 2.0], points=1)
