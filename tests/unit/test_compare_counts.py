"""Verdicts on counts (kbench.compare.counts): exact where counts repeat, statistical where they vary.

Expected values are worked out by hand from the counts given; the statistical cases use
counts whose difference is far beyond their spread (or none at all), so their outcome does
not depend on the test's details."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kbench.compare.counts import (
    EXACT_DESIGN,
    REASON_EXACT,
    REASON_VARIED,
    SideCounts,
    aa_halves,
    counts_matrix,
    decided,
    exact_verdict,
    judge_counts,
)


def side(*runs: list[float]) -> SideCounts:
    return SideCounts.of(runs)


def test_equal_counts_are_no_change_exactly() -> None:
    verdict = judge_counts(side([2131.0] * 1000), side([2131.0] * 1000), direction="lower")
    assert verdict.verdict == "no change"
    assert verdict.change_pct == 0.0 and verdict.ci_pct == (0.0, 0.0)
    assert verdict.reason.startswith(f"{REASON_EXACT}: 2131 → 2131")
    assert verdict.design == EXACT_DESIGN


def test_one_instruction_more_per_call_is_an_exact_regression() -> None:
    verdict = judge_counts(side([2131.0] * 4), side([2138.0] * 4), direction="lower")
    assert verdict.verdict == "regression"
    assert verdict.change_pct == pytest.approx(100 * 7 / 2131, rel=1e-12)  # +0.32848...%
    assert verdict.ci_pct == (verdict.change_pct, verdict.change_pct)
    assert "+7, +0.3285%" in verdict.reason


def test_fewer_instructions_are_an_improvement_and_direction_decides() -> None:
    assert judge_counts(side([100.0, 100.0]), side([99.0, 99.0]), direction="lower").verdict == "improvement"
    assert exact_verdict(100.0, 99.0, "higher") == "regression"
    assert exact_verdict(5.0, 5.0, "higher") == "no change"


def test_samples_that_differ_with_the_inputs_repeat_by_their_runs_totals() -> None:
    base = side([10.0, 30.0, 20.0], [10.0, 30.0, 20.0])  # every run's mean 20
    new = side([11.0, 31.0, 21.0], [11.0, 31.0, 21.0])  # 21
    assert not base.samples_repeat and base.runs_repeat
    verdict = judge_counts(base, new, direction="lower")
    assert verdict.reason.startswith(REASON_EXACT)
    assert verdict.change_pct == pytest.approx(5.0)
    assert "all 2 runs' totals equal" in verdict.reason


def test_one_count_per_run_needs_a_second_run_to_decide() -> None:
    one = side([13.9375])
    assert not one.repeats and not decided([one])
    two = side([13.9375], [13.9375])
    assert two.repeats and decided([two, side([1.0] * 3)])


def test_counts_that_vary_are_judged_statistically_with_the_reason() -> None:
    rng = np.random.default_rng(7)
    base = side(list(1000 + rng.integers(0, 3, 60)))  # 1000..1002: interrupts, say
    new = side(list(1100 + rng.integers(0, 3, 60)))  # 10% more: far beyond the spread
    verdict = judge_counts(base, new, direction="lower", why_varied="interrupts reach the samples")
    assert verdict.verdict == "regression"
    assert verdict.reason.startswith(REASON_VARIED)
    assert "interrupts reach the samples" in verdict.reason
    assert 9.7 < verdict.change_pct < 10.3
    assert "Mann-Whitney" in verdict.design


def test_varying_counts_that_do_not_differ_are_not_a_change() -> None:
    values = [1000.0, 1001.0, 1002.0, 1000.0, 1003.0, 1001.0, 1000.0, 1002.0]
    verdict = judge_counts(side(values), side(values[::-1]), direction="lower")
    assert verdict.verdict in ("no change", "inconclusive")
    assert verdict.reason.startswith(REASON_VARIED)


def test_too_few_varying_counts_are_inconclusive() -> None:
    verdict = judge_counts(side([1.0, 2.0]), side([1.0, 2.0]), direction="lower", why_varied="why")
    assert verdict.verdict == "inconclusive" and "too few counts" in verdict.reason


def test_an_empty_side_is_inconclusive() -> None:
    verdict = judge_counts(side(), side([1.0, 1.0]), direction="lower")
    assert verdict.verdict == "inconclusive" and math.isnan(verdict.change_pct)


def test_a_side_split_against_itself() -> None:
    even, odd = aa_halves(side([1.0, 2.0, 3.0, 4.0]))
    assert list(even.values) == [1.0, 3.0] and list(odd.values) == [2.0, 4.0]
    even, odd = aa_halves(side([5.0], [6.0], [7.0]))  # one count per run: runs even against odd
    assert list(even.values) == [5.0, 7.0] and list(odd.values) == [6.0]


def test_seed_004s_table_by_counts() -> None:
    # per-op counts of 98, 99 and 100 steps at 7 instructions a step plus 9 of the call
    counts = [98 * 7 + 9.0, 99 * 7 + 9.0, 100 * 7 + 9.0]
    matrix = counts_matrix(["98", "99", "100"], [side([c] * 10) for c in counts], direction="lower")
    assert list(np.diag(matrix.change_pct)) == [0.0, 0.0, 0.0]
    assert all(matrix.verdicts[i][i] == "no change" for i in range(3))
    assert matrix.verdicts[0][1] == "regression" and matrix.verdicts[2][0] == "improvement"
    assert matrix.change_pct[0, 1] == pytest.approx(100 * 7 / (98 * 7 + 9))
    assert matrix.exact.all()
    assert matrix.to_dict()["names"] == ["98", "99", "100"]
