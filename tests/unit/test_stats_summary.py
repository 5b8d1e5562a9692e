"""summarize(): every field against numpy/scipy references and the edge cases."""

import json

import numpy as np
import pytest
from scipy import stats

from kbench.stats import Summary, median_ci, outlier_count, summarize
from kbench.stats.ci import METHOD_MIN_MAX_FALLBACK, METHOD_ORDER_STATISTICS


@pytest.fixture(scope="module")
def latencies():
    values = np.random.default_rng(42).lognormal(np.log(800.0), 0.5, 20_001)
    values[::997] *= 50.0  # interrupts
    return values


def test_fields_match_references(latencies):
    summary = summarize(latencies)
    assert summary.n == latencies.size
    assert summary.min == latencies.min() and summary.max == latencies.max()
    assert summary.mean == pytest.approx(latencies.mean(), rel=1e-12)
    assert summary.stdev == pytest.approx(np.std(latencies, ddof=1), rel=1e-12)
    expected = np.percentile(latencies, [50, 90, 95, 99, 99.9])
    got = [summary.p50, summary.p90, summary.p95, summary.p99, summary.p999]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert summary.median == summary.p50
    assert summary.mad == pytest.approx(stats.median_abs_deviation(latencies), rel=1e-12)
    assert summary.mad_scaled == pytest.approx(1.4826 * summary.mad, rel=1e-15)
    reference = stats.quantile_test(latencies, q=800.0, p=0.5).confidence_interval(0.95)
    assert summary.median_ci == (reference.low, reference.high)
    assert summary.median_ci_level == 0.95
    assert summary.median_ci_coverage >= 0.95
    assert summary.median_ci_method == METHOD_ORDER_STATISTICS
    assert summary.outliers == outlier_count(latencies)
    assert summary.outliers >= latencies[::997].size - 2
    assert summary.steady_state_index <= 0.01 * latencies.size
    assert summary.warnings == ()


def test_input_is_not_modified(latencies):
    before = latencies.copy()
    summarize(latencies)
    np.testing.assert_array_equal(latencies, before)


def test_confidence_changes_the_interval(latencies):
    narrow = summarize(latencies, confidence=0.8)
    wide = summarize(latencies, confidence=0.99)
    assert wide.median_ci[0] <= narrow.median_ci[0] <= narrow.median_ci[1] <= wide.median_ci[1]
    assert wide.median_ci_level == 0.99
    ci = median_ci(latencies, confidence=0.99)
    assert wide.median_ci == (ci.low, ci.high) and wide.median_ci_coverage == ci.coverage


def test_rejects_bad_confidence():
    with pytest.raises(ValueError, match="confidence must lie strictly between 0 and 1"):
        summarize([1.0, 2.0], confidence=95)


def test_single_sample():
    summary = summarize([123.0])
    assert summary.n == 1
    assert summary.stdev == 0.0
    assert summary.min == summary.max == summary.p50 == summary.p999 == 123.0
    assert summary.mad == 0.0 and summary.outliers == 0
    assert summary.median_ci == (123.0, 123.0)
    assert summary.median_ci_coverage == 0.0
    assert summary.median_ci_method == METHOD_MIN_MAX_FALLBACK
    assert summary.steady_state_index == 0
    assert len(summary.warnings) == 1 and summary.warnings[0].startswith("ci-level-unreachable:")


def test_two_samples():
    summary = summarize([10.0, 20.0])
    assert summary.p50 == 15.0
    assert summary.p90 == pytest.approx(19.0)
    assert summary.stdev == pytest.approx(np.std([10.0, 20.0], ddof=1))
    assert summary.mad == 5.0
    assert summary.median_ci == (10.0, 20.0)
    assert summary.median_ci_coverage == 0.5
    assert summary.outliers == 0
    assert [w.split(":")[0] for w in summary.warnings] == ["ci-level-unreachable"]


def test_all_equal_values():
    summary = summarize([250.0] * 1000)
    assert summary.stdev == 0.0 and summary.mad == 0.0 and summary.mad_scaled == 0.0
    assert summary.outliers == 0
    assert summary.median_ci == (250.0, 250.0)
    assert summary.median_ci_method == METHOD_ORDER_STATISTICS
    assert summary.steady_state_index == 0
    assert summary.warnings == ()


def test_mad_zero_counts_outliers_against_the_resolution():
    # 101 is one step (the smallest non-zero deviation) off the median; 250 is 150 steps off,
    # beyond 3.5 / 0.6745 = 5.19 steps.
    summary = summarize([100.0] * 30 + [101.0, 250.0])
    assert summary.mad == 0.0
    assert summary.outliers == 1
    assert summary.warnings == ()


def test_warmup_is_reported_not_removed():
    values = np.random.default_rng(8).lognormal(np.log(500.0), 0.3, 10_000)
    values[:500] *= 2.5
    summary = summarize(values)
    assert 450 <= summary.steady_state_index <= 600
    assert any(w.startswith("warm-up:") for w in summary.warnings)
    assert summary.n == 10_000  # all values are summarised
    assert summary.max == values.max()
    quiet = summarize(values, detect_warmup=False)
    assert quiet.steady_state_index == 0
    assert not any(w.startswith("warm-up:") for w in quiet.warnings)


def test_to_dict_is_json_ready(latencies):
    summary = summarize(latencies[:100])
    data = summary.to_dict()
    assert set(data) == {f.name for f in Summary.__dataclass_fields__.values()}
    assert isinstance(data["median_ci"], list) and isinstance(data["warnings"], list)
    assert json.loads(json.dumps(data)) == data
    assert data["n"] == 100 and data["p50"] == summary.p50


def test_summary_is_immutable(latencies):
    summary = summarize(latencies[:50])
    with pytest.raises(AttributeError):
        summary.n = 3  # type: ignore[misc]
