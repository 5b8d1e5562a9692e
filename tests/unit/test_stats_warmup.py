"""Robust MSER-5 steady-state detection and chunk medians, on series with known change points."""

import numpy as np
import pytest

from kbench.stats import chunk_medians, detect_warmup, steady_state_index
from kbench.stats.thresholds import MSER_BATCH_SIZE
from kbench.stats.warmup import mser_statistic


def lognormal(seed, n, median=1000.0, sigma=0.4):
    return np.random.default_rng(seed).lognormal(np.log(median), sigma, n)


def brute_force_mser(y, search_fraction=0.5):
    k = len(y)
    return np.array([np.sum((y[d:] - y[d:].mean()) ** 2) / (k - d) ** 2 for d in range(int(k * search_fraction) + 1)])


def test_mser_statistic_matches_its_definition():
    y = np.random.default_rng(1).normal(10.0, 2.0, 37)
    np.testing.assert_allclose(mser_statistic(y), brute_force_mser(y), rtol=1e-10)


@pytest.mark.parametrize("seed", range(5))
def test_warmup_of_500_slow_samples_is_found(seed):
    values = lognormal(seed, 10_000)
    values[:500] *= np.linspace(3.0, 1.5, 500)  # slow, improving start
    warmup = detect_warmup(values)
    assert 450 <= warmup.steady_state_index <= 600
    assert warmup.material
    assert warmup.warmup_median > warmup.steady_median
    assert len(warmup.warnings) == 1
    assert warmup.warnings[0].startswith("warm-up: the first")
    assert "threshold 5%" in warmup.warnings[0]


def test_step_change_point_is_located():
    values = lognormal(11, 20_000)
    values[:3000] *= 2.0
    assert 2900 <= steady_state_index(values) <= 3100


@pytest.mark.parametrize("seed", range(10))
def test_stationary_lognormal_has_no_warmup(seed):
    values = lognormal(100 + seed, 20_000, sigma=0.6)
    warmup = detect_warmup(values)
    assert warmup.steady_state_index <= 0.01 * values.size
    assert warmup.warnings == ()


@pytest.mark.parametrize("seed", range(10))
def test_stationary_with_huge_spikes_has_no_warmup(seed):
    rng = np.random.default_rng(200 + seed)
    values = lognormal(200 + seed, 20_000)
    spikes = rng.choice(10_000, size=5, replace=False)  # all in the first half
    values[spikes] *= 1000.0
    values[9_000] = 5e7  # one late interrupt-sized spike near the end of the search
    warmup = detect_warmup(values)
    assert warmup.steady_state_index <= 0.01 * values.size
    assert warmup.warnings == ()


def test_clipping_is_what_makes_spikes_harmless():
    # Without clipping, plain MSER-5 truncates right after a big spike at 40 %.
    values = lognormal(5, 10_000)
    values[4_000] = 1e8
    plain = mser_statistic(values.reshape(-1, MSER_BATCH_SIZE).mean(axis=1))
    assert int(np.argmin(plain)) * MSER_BATCH_SIZE > 4_000
    assert steady_state_index(values) <= 100


def test_warmup_in_quantised_data_with_zero_mad():
    # Integer nanoseconds: most values identical (MAD = 0), a slow start.
    rng = np.random.default_rng(9)
    values = np.where(rng.random(5_000) < 0.8, 100.0, 101.0)
    values[:400] = 300.0
    warmup = detect_warmup(values)
    assert warmup.steady_state_index == 400
    assert warmup.material


def test_constant_series_has_no_warmup():
    assert steady_state_index([42.0] * 1000) == 0


def test_too_short_series_is_not_analysed():
    values = np.r_[np.full(20, 1000.0), np.full(29, 10.0)]  # 49 samples < 10 batches of 5
    assert steady_state_index(values) == 0


def test_slow_drift_says_no_steady_state():
    values = lognormal(4, 10_000, sigma=0.1) * np.linspace(3.0, 1.0, 10_000)
    warmup = detect_warmup(values)
    assert warmup.at_search_limit
    assert any(w.startswith("no-steady-state:") for w in warmup.warnings)


def test_small_immaterial_warmup_is_not_reported():
    values = lognormal(6, 10_000, sigma=0.05)
    values[:1000] *= 1.02  # clearly detectable, but only 2 % slower
    warmup = detect_warmup(values)
    assert warmup.steady_state_index > 0
    assert not warmup.material
    assert warmup.warnings == ()


def test_no_warmup_result_fields():
    warmup = detect_warmup(lognormal(1, 100, sigma=0.0))
    assert warmup.steady_state_index == 0
    assert np.isnan(warmup.warmup_median) and np.isnan(warmup.relative_difference)
    assert warmup.steady_median == pytest.approx(1000.0)


def test_chunk_medians_quarters():
    values = np.r_[np.full(25, 9.0), np.full(75, 1.0)]
    assert chunk_medians(values).tolist() == [9.0, 1.0, 1.0, 1.0]


def test_chunk_medians_uneven_split_follows_array_split():
    # 10 values in 4 chunks: sizes 3, 3, 2, 2
    values = np.arange(10.0)
    assert chunk_medians(values, 4).tolist() == [1.0, 4.0, 6.5, 8.5]


def test_chunk_medians_rejects_bad_arguments():
    with pytest.raises(ValueError, match="at least 1"):
        chunk_medians([1.0, 2.0], 0)
    with pytest.raises(ValueError, match="cannot split 2 samples into 3 chunks"):
        chunk_medians([1.0, 2.0], 3)
