"""Spread (stdev, MAD) and modified z-score outliers."""

import numpy as np
import pytest
from scipy import stats

from kbench.stats import mad, mad_scaled, modified_z_scores, outlier_count, outlier_mask, sample_stdev
from kbench.stats.outliers import deviation_limit
from kbench.stats.thresholds import MAD_TO_SIGMA


@pytest.mark.parametrize("n", [1, 2, 3, 10, 101, 10_000])
def test_mad_matches_scipy(n):
    values = np.random.default_rng(n).lognormal(5.0, 1.0, n)
    assert mad(values) == pytest.approx(stats.median_abs_deviation(values), rel=1e-12)
    # scipy's "normal" scale is 1/Phi^-1(3/4) = 1.482602...; ours is the rounded 1.4826
    assert mad_scaled(values) == pytest.approx(stats.median_abs_deviation(values, scale="normal"), rel=2e-6)
    assert mad_scaled(values) == MAD_TO_SIGMA * mad(values)


def test_mad_hand_case():
    # median 3; deviations 2, 1, 0, 1, 6 -> median 1
    assert mad([1, 2, 3, 4, 9]) == 1.0


def test_stdev_ddof1_and_single_value():
    values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert sample_stdev(values) == pytest.approx(np.std(values, ddof=1))
    assert sample_stdev([5.0]) == 0.0


def test_modified_z_hand_case():
    # median 3, MAD 1 -> M = 0.6745 * (x - 3)
    np.testing.assert_allclose(modified_z_scores([1, 2, 3, 4, 9]), 0.6745 * np.array([-2, -1, 0, 1, 6]))


def test_outlier_threshold_is_3_5():
    # M for 9 is 0.6745 * 6 = 4.047 > 3.5; for 8 it is 3.37 < 3.5
    assert outlier_mask([1, 2, 3, 4, 9]).tolist() == [False, False, False, False, True]
    assert outlier_count([1, 2, 3, 4, 8]) == 0


def test_low_outliers_count_too():
    values = [100, 101, 102, 103, 104, 105, 106, 1]
    assert outlier_mask(values).tolist() == [False] * 7 + [True]


def test_mask_agrees_with_scores_on_random_data():
    values = np.random.default_rng(3).lognormal(7.0, 0.7, 50_000)
    scores = modified_z_scores(values)
    mask = outlier_mask(values)
    boundary = np.isclose(np.abs(scores), 3.5, rtol=1e-12)
    assert np.array_equal(mask[~boundary], (np.abs(scores) > 3.5)[~boundary])
    assert 0 < mask.sum() < values.size


def test_all_equal_values_have_no_outliers():
    values = [7.0] * 20
    assert mad(values) == 0.0
    assert outlier_count(values) == 0
    assert np.all(modified_z_scores(values) == 0.0)


def test_mad_zero_judges_against_the_resolution_not_everything_off_the_median():
    # Quantized samples (getppid at batch 16 on a 10 ns timer: steps of 0.625 ns): 60% at the
    # median, the rest one or two steps off, and two far values. The smallest non-zero deviation
    # is one step, so the limit is 3.5 / 0.6745 = 5.19 steps: only the two far values are outliers.
    step = 0.625
    values = np.array([160.0] * 60 + [160 + step] * 20 + [160 - step] * 12 + [160 + 2 * step] * 6
                      + [160 + 6 * step, 160 + 400 * step])
    assert mad(values) == 0.0
    assert outlier_count(values) == 2
    assert outlier_mask(values).tolist() == [False] * 98 + [True, True]
    scores = modified_z_scores(values)
    assert scores[60] == pytest.approx(0.6745) and scores[-2] == pytest.approx(6 * 0.6745)
    # and the same scale when the median and MAD are passed in
    assert outlier_count(values, center=160.0, mad=0.0) == 2


def test_custom_threshold_and_limit():
    assert deviation_limit(1.0) == pytest.approx(3.5 / 0.6745)
    assert outlier_count([1, 2, 3, 4, 8], threshold=3.0) == 1
