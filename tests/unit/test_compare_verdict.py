"""compare_trials: verdicts on constructed data, the decision table, checks, and trial_statistic."""

import json
import math

import numpy as np
import pytest
from scipy import stats

from kbench.compare.judge import compare_trials
from kbench.compare.trial import trial_statistic
from kbench.compare.verdict import (
    IMPROVEMENT,
    INCONCLUSIVE,
    NO_CHANGE,
    REASON_ALPHA_UNREACHABLE,
    REASON_EMPTY,
    REASON_INVALID,
    REASON_SIGNIFICANT,
    REASON_TOO_FEW_TRIALS,
    REASON_TOO_NOISY,
    REASON_WITHIN_MARGIN,
    REGRESSION,
    WARNING_FEW_TRIALS,
    WARNING_KS_SHAPE,
    WARNING_TIES,
    decide,
)
from kbench.report.comparison.model import metric_from_dict

BASE = np.array([1000.0, 1004.0, 997.0, 1002.0, 999.0, 1001.0, 1003.0, 998.0])


def test_clear_regression_for_lower_is_better():
    new = BASE * 1.05
    v = compare_trials(BASE, new, direction="lower", metric="syscall.getppid.latency", unit="ns")
    assert v.verdict == REGRESSION
    assert v.reason.startswith(REASON_SIGNIFICANT)
    assert v.change_pct == pytest.approx(5.0)
    assert v.ci_pct[0] > 0 and v.ci_pct[0] <= 5.0 <= v.ci_pct[1]
    assert v.p_value == pytest.approx(stats.mannwhitneyu(new, BASE, method="exact").pvalue)
    assert v.p_value == pytest.approx(2 / math.comb(16, 8))
    assert v.ks_p_value == pytest.approx(stats.ks_2samp(BASE, new).pvalue)
    assert (v.trials, v.test_method, v.warnings) == ((8, 8), "exact", ())
    assert (v.base_median, v.new_median) == (np.median(BASE), np.median(new))


def test_direction_higher_flips_regression_and_improvement():
    assert compare_trials(BASE, BASE * 1.05, direction="higher").verdict == IMPROVEMENT
    assert compare_trials(BASE, BASE * 0.95, direction="higher").verdict == REGRESSION
    assert compare_trials(BASE, BASE * 0.95, direction="lower").verdict == IMPROVEMENT


def test_same_data_is_no_change_within_a_margin_and_inconclusive_without_one():
    v = compare_trials(BASE, BASE.copy(), direction="lower", margin=0.05)
    assert v.verdict == NO_CHANGE and v.reason.startswith(REASON_WITHIN_MARGIN)
    assert v.p_value == 1.0 and v.change_pct == 0.0
    assert v.ci_pct[0] <= 0 <= v.ci_pct[1]
    assert any(w.startswith(WARNING_TIES) for w in v.warnings)  # every value is tied
    # without a margin nothing is "no change": not significant is not the same as equal
    bare = compare_trials(BASE, BASE.copy(), direction="lower")
    assert bare.verdict == INCONCLUSIVE and bare.reason.startswith("not-significant")
    assert "without a margin nothing can be called no change" in bare.reason


def test_two_trials_are_inconclusive_with_reason():
    v = compare_trials([1000.0, 1001.0], [2000.0, 2001.0], direction="lower")
    assert v.verdict == INCONCLUSIVE
    assert v.reason.startswith(REASON_TOO_FEW_TRIALS)
    assert not v.tested
    assert any(w.startswith(WARNING_FEW_TRIALS) for w in v.warnings)


def test_three_trials_cannot_reach_alpha_005_but_can_reach_01():
    base, new = [1000.0, 1001.0, 1002.0], [2000.0, 2001.0, 2002.0]
    v = compare_trials(base, new, direction="lower")
    assert v.verdict == INCONCLUSIVE and v.reason.startswith(REASON_ALPHA_UNREACHABLE)
    assert v.min_attainable_p == pytest.approx(0.1)
    assert compare_trials(base, new, direction="lower", alpha=0.1).verdict == REGRESSION


@pytest.mark.parametrize(
    ("base", "new", "reason"),
    [
        ([], [1.0, 2.0, 3.0], REASON_EMPTY),
        ([1.0, 2.0, 3.0], [], REASON_EMPTY),
        ([1.0, float("nan"), 3.0], [1.0, 2.0, 3.0], REASON_INVALID),
        ([1.0, 2.0, 3.0], [1.0, float("inf"), 3.0], REASON_INVALID),
        ([1.0, 0.0, 3.0], [1.0, 2.0, 3.0], REASON_INVALID),
    ],
)
def test_empty_or_invalid_sides_are_inconclusive(base, new, reason):
    v = compare_trials(base, new, direction="lower")
    assert v.verdict == INCONCLUSIVE and v.reason.startswith(reason)
    assert math.isnan(v.p_value) and not v.tested


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="direction"):
        compare_trials(BASE, BASE, direction="smaller")
    with pytest.raises(ValueError, match="alpha"):
        compare_trials(BASE, BASE, direction="lower", alpha=1.5)
    with pytest.raises(ValueError, match="margin"):
        compare_trials(BASE, BASE, direction="lower", margin=-0.01)
    with pytest.raises(ValueError, match="one-dimensional"):
        compare_trials([[1.0, 2.0]], BASE, direction="lower")


def test_margin_decisions_on_constructed_data():
    rng = np.random.default_rng(3)
    base = 1000 * np.exp(rng.normal(0, 0.002, 20))
    same = 1000 * np.exp(rng.normal(0, 0.002, 20))
    v = compare_trials(base, same, direction="lower", margin=0.01)
    assert v.verdict == NO_CHANGE and v.reason.startswith(REASON_WITHIN_MARGIN)
    big = compare_trials(base, same * 1.05, direction="lower", margin=0.01)
    assert big.verdict == REGRESSION
    # a real but small change (0.5%) that the interval places inside +/-1% is said as one, never "no change"
    small = compare_trials(base, same * 1.005, direction="lower", margin=0.01)
    assert small.verdict == REGRESSION and small.p_value <= 0.05
    assert small.ci_pct[0] >= -1.0 and small.ci_pct[1] <= 1.0 and "smaller than the ±1% margin" in small.reason
    noisy = compare_trials(base * np.exp(rng.normal(0, 0.05, 20)), same, direction="lower", margin=0.01)
    assert noisy.verdict == INCONCLUSIVE and noisy.reason.startswith(REASON_TOO_NOISY)


@pytest.mark.parametrize(
    ("p", "ci", "margin", "expected", "tag"),
    [
        (0.01, (1.0, 3.0), None, REGRESSION, REASON_SIGNIFICANT),
        (0.01, (-3.0, -1.0), None, IMPROVEMENT, REASON_SIGNIFICANT),
        (0.20, (-1.0, 3.0), None, INCONCLUSIVE, "not-significant"),
        (0.01, (-0.5, -0.1), 1.0, IMPROVEMENT, REASON_SIGNIFICANT),  # real, smaller than the margin
        (0.20, (-0.5, 0.4), 1.0, NO_CHANGE, REASON_WITHIN_MARGIN),
        (0.01, (1.5, 3.0), 1.0, REGRESSION, REASON_SIGNIFICANT),
        (0.01, (0.5, 3.0), 1.0, REGRESSION, REASON_SIGNIFICANT),  # real, but may be under the margin
        (0.20, (-2.0, 3.0), 1.0, INCONCLUSIVE, REASON_TOO_NOISY),
        (0.01, (float("nan"), float("nan")), None, INCONCLUSIVE, "not-significant"),
        (0.01, (float("nan"), float("nan")), 1.0, INCONCLUSIVE, REASON_TOO_NOISY),
    ],
)
def test_decision_table_rows(p, ci, margin, expected, tag):
    verdict, reason = decide(direction="lower", p_value=p, ci_pct=ci, alpha=0.05, margin_pct=margin)
    assert verdict == expected and reason.startswith(tag)
    assert "nan" not in reason.lower()
    if margin is not None and expected in (REGRESSION, IMPROVEMENT):
        inside = -margin <= ci[0] and ci[1] <= margin
        reaches = not inside and min(abs(ci[0]), abs(ci[1])) <= margin
        assert ("the change is smaller than the" in reason) == inside
        assert ("may be smaller than the margin" in reason) == reaches
    if expected == NO_CHANGE:
        assert f"within ±{margin:g}%" in reason


def test_ks_reports_a_change_of_shape_the_rank_test_does_not_see():
    rng = np.random.default_rng(8)
    base = 1000 * np.exp(rng.normal(0, 0.002, 40))
    wide = 1000 * np.exp(rng.normal(0, 0.03, 40))  # same median, far wider
    v = compare_trials(base, wide, direction="lower")
    assert not v.significant
    assert any(w.startswith(WARNING_KS_SHAPE) for w in v.warnings)


def test_to_dict_is_plain_json_and_readable_by_the_report_model():
    v = compare_trials(BASE, BASE * 1.02, direction="lower", metric="m", unit="ns")
    data = v.to_dict()
    json.dumps(data)
    assert data["ci_pct"] == list(v.ci_pct) and data["trials"] == [8, 8]
    report = metric_from_dict(data)
    assert (report.verdict, report.base, report.change_pct) == (v.verdict, v.base_median, v.change_pct)


def test_trial_statistic_is_the_median_of_the_steady_state():
    rng = np.random.default_rng(2)
    warm = rng.normal(2000, 20, 300)
    steady = rng.normal(1000, 10, 1700)
    statistic = trial_statistic(np.concatenate([warm, steady]))
    assert statistic == pytest.approx(np.median(steady), rel=0.002)
    short = [5.0, 1.0, 3.0]
    assert trial_statistic(short) == 3.0  # too short for warm-up detection: plain median
    with pytest.raises(ValueError):
        trial_statistic([])
