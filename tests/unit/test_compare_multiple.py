"""Holm and Benjamini-Hochberg adjustment: references and re-decided verdicts."""

import numpy as np
import pytest
from scipy import stats

from kbench.compare.judge import compare_trials
from kbench.compare.multiple import adjust, benjamini_hochberg, holm
from kbench.compare.verdict import INCONCLUSIVE, REGRESSION


def test_holm_hand_computed_example():
    # sorted: 0.005 (x4) -> 0.02, 0.01 (x3) -> 0.03, 0.03 (x2) -> 0.06, 0.04 (x1) -> 0.04 -> running max 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_bh_matches_scipy_false_discovery_control():
    rng = np.random.default_rng(4)
    for size in (1, 2, 7, 50):
        p = np.concatenate([rng.uniform(size=size), rng.uniform(0, 0.01, size=size)])
        assert benjamini_hochberg(p) == pytest.approx(stats.false_discovery_control(p, method="bh"))
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])


def test_adjust_re_decides_and_names_the_method():
    rng = np.random.default_rng(9)
    base = 1000 * np.exp(rng.normal(0, 0.01, 8))
    clear = compare_trials(base, base * 1.10, direction="lower", metric="clear")  # p = 2/12870
    borderline_new = 1000 * np.exp(rng.normal(0.012, 0.01, 8))
    borderline = compare_trials(base, borderline_new, direction="lower", metric="borderline")
    too_few = compare_trials(base[:2], base[:2], direction="lower", metric="few")
    nothing = [compare_trials(base, 1000 * np.exp(rng.normal(0, 0.01, 8)), direction="lower") for _ in range(6)]
    assert 0.005 < borderline.p_value <= 0.05 and borderline.verdict == REGRESSION
    family = [clear, borderline, too_few, *nothing]

    adjusted = adjust(family, method="holm")
    assert [v.metric for v in adjusted] == [v.metric for v in family]
    assert all(v.adjustment == "holm" for v in adjusted)
    assert adjusted[0].verdict == REGRESSION  # survives: 8 * 1.6e-4 < 0.05
    assert adjusted[1].verdict == INCONCLUSIVE  # no longer significant over 8 metrics (and no margin)
    assert adjusted[1].p_value_unadjusted == borderline.p_value
    assert adjusted[2].verdict == INCONCLUSIVE and adjusted[2].p_value == too_few.p_value  # not in the family
    tested = [v.p_value_unadjusted for v in family if v.tested]
    assert [v.p_value for v in adjusted if v.tested] == pytest.approx(holm(tested))
    assert "holm-adjusted over 8 metrics" in adjusted[1].reason

    bh = adjust(family, method="bh")
    assert [v.p_value for v in bh if v.tested] == pytest.approx(stats.false_discovery_control(tested))
    with pytest.raises(ValueError, match="already adjusted"):
        adjust(adjusted)
    with pytest.raises(ValueError, match="method"):
        adjust(family, method="bonferroni")  # type: ignore[arg-type]
