"""Builds judged on their copies (kbench.compare.placement), against scipy's two-sample t-test."""

from __future__ import annotations

import math
from pathlib import Path

import click
import numpy as np
import pytest
from scipy import stats

from kbench.catalog.benchmarks import lookup
from kbench.cli.module_options import DEFAULT_COPIES, module_copy_count
from kbench.compare.placement import builds_of, copy_label, copy_value, judge_copies, t_interval
from kbench.compare.sensitivity import copies_sensitivity_matrix
from kbench.compare.verdict import INCONCLUSIVE, NO_CHANGE, REGRESSION
from kbench.contract.request import RunRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.interleaved import InterleavedOutcome, InterleavedSide, MetricInfo, Slot
from kbench.kinds.kfunc.loaded import module_copies
from kbench.report.comparison.copies import build_copies_report

BASE = [0.0, 0.0036, -0.0012]
NEW = [0.0985, 0.0936, 0.0940]


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.001])
def test_interval_and_p_are_scipys_pooled_t_test(alpha: float) -> None:
    difference, low, high, p = t_interval(BASE, NEW, alpha)
    reference = stats.ttest_ind(NEW, BASE, equal_var=True)
    interval = reference.confidence_interval(1 - alpha)
    assert difference == pytest.approx(np.mean(NEW) - np.mean(BASE))
    assert p == pytest.approx(reference.pvalue, rel=1e-9)
    assert (low, high) == pytest.approx((interval.low, interval.high), rel=1e-9)


def test_the_critical_value_is_the_t_tables() -> None:
    """Two copies of 2 values each (2 degrees of freedom), a spread of 1 within each: the
    half-width is t(0.975, 2) * sqrt(0.5 * (1/2 + 1/2)) = 4.302653 * 0.707107 (t table)."""
    _, low, high, _ = t_interval([0.0, 1.0], [10.0, 11.0], 0.05)
    assert (high - low) / 2 == pytest.approx(4.302653 * math.sqrt(0.5), rel=1e-6)


def test_builds_ten_percent_apart_are_a_regression_in_percent() -> None:
    verdict = judge_copies(BASE, NEW, base_scale=1000.0, metric="m", unit="cycles", direction="lower",
                           alpha=0.01, margin=0.005, design="copies")
    assert verdict.verdict == REGRESSION
    assert verdict.change_pct == pytest.approx(100 * math.expm1(np.mean(NEW) - np.mean(BASE)))
    assert verdict.new_median / verdict.base_median == pytest.approx(1 + verdict.change_pct / 100)
    assert verdict.trials == (3, 3) and verdict.test_method == "student-t on copies"
    assert "copies of one build 0.49% apart at most" in verdict.reason


def test_copies_as_far_apart_as_the_builds_are_not_a_verdict() -> None:
    """One copy of the base 2 % off (a placement seen under TCG): the builds' 1 % apart is not told."""
    verdict = judge_copies([0.0, 0.0, 0.02], [0.01, 0.011, 0.009], base_scale=1.0, metric="m", unit="cycles",
                           direction="lower", alpha=0.05, margin=0.005, design="copies")
    assert verdict.verdict == INCONCLUSIVE
    close = judge_copies([0.0, 0.0001, -0.0001], [0.0002, 0.0, 0.0001], base_scale=1.0, metric="m", unit="cycles",
                         direction="lower", alpha=0.05, margin=0.005, design="copies")
    assert close.verdict == NO_CHANGE


def test_too_few_copies_or_an_empty_copy_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 2 copies"):
        judge_copies([0.0], [0.1, 0.2], base_scale=1.0, metric="m", unit="u", direction="lower", alpha=0.05,
                     margin=None, design="")
    with pytest.raises(ValueError, match="no judged block"):
        judge_copies([0.0, math.nan], [0.1, 0.2], base_scale=1.0, metric="m", unit="u", direction="lower",
                     alpha=0.05, margin=None, design="")
    assert math.isnan(copy_value([math.nan]))
    assert copy_value([0.1, math.nan, 0.3, 0.2]) == pytest.approx(0.2)


def test_copies_load_in_turns_under_names_of_their_own() -> None:
    old, new = Path("old.c"), Path("new.c")
    assert module_copies([old, new], 1) == ([old, new], ["_old", "_new"])
    paths, suffixes = module_copies([old, new], 3)
    assert paths == [old, new, old, new, old, new]
    assert suffixes == ["_old_1", "_new_1", "_old_2", "_new_2", "_old_3", "_new_3"]


def test_the_copy_count_follows_what_the_modules_are(tmp_path: Path) -> None:
    c_files = (Path("old.c"), Path("new.c"))
    assert module_copy_count(c_files, None) == DEFAULT_COPIES
    assert module_copy_count(c_files, 1) == 1
    assert module_copy_count((Path("one.c"),), None) == 1
    assert module_copy_count((Path("old.ko"), Path("new.c")), None) == 1
    with pytest.raises(click.UsageError, match=r"old\.ko cannot be loaded twice"):
        module_copy_count((Path("old.ko"), Path("new.c")), 3)
    with pytest.raises(click.UsageError, match="--module given twice or more"):
        module_copy_count((Path("one.c"),), 2)


def _outcome(copy_factors: list[float], blocks: int = 40) -> InterleavedOutcome:
    """Six sides (old, new, old, new, old, new), side i's slots copy_factors[i] times 1000 cycles,
    each slot jittered by a few parts per thousand."""
    rng = np.random.default_rng(7)
    bench = lookup("kfunc.spin")
    sides = [InterleavedSide(ComparisonSide(f"{'old' if i % 2 == 0 else 'new'}.c#{i // 2 + 1}", "deb:x", bench,
                                            RunRequest(bench.name, {})), run_id=i + 1)
             for i in range(len(copy_factors))]
    slots = [Slot(side, block, block * 12 + 2 * side + half,
                  {"kfunc.spin.cycles": 1000.0 * factor * (1 + 0.003 * rng.standard_normal())}, 1e-5)
             for block in range(blocks) for side, factor in enumerate(copy_factors) for half in (0, 1)]
    metric = MetricInfo("kfunc.spin.cycles", "cycles", "lower")
    return InterleavedOutcome(sides, [metric], slots, blocks, {}, "blocks", 1.0, 20.0, "slot", "", "abc")


def test_the_report_judges_builds_on_their_copies_values() -> None:
    factors = [1.0, 1.10, 1.004, 1.098, 0.997, 1.105]
    outcome = _outcome(factors)
    report = build_copies_report(outcome, ("old.c", "new.c"), (0, 1, 0, 1, 0, 1), title="t", alpha=0.01,
                                 margin=0.005, context={}, parameters={"seed": 0})
    assert (report.base_label, report.new_labels, report.label_kind) == ("old.c", ("new.c",), "module")
    (metric,) = report.metrics
    values = [float(np.median(outcome.log_ratios(side, "kfunc.spin.cycles"))) if side else 0.0 for side in range(6)]
    reference = stats.ttest_ind(values[1::2], values[0::2], equal_var=True)
    assert metric.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert metric.change_pct == pytest.approx(100 * math.expm1(np.mean(values[1::2]) - np.mean(values[0::2])))
    assert metric.verdict == REGRESSION and 9.0 < metric.change_pct < 11.0
    assert len(metric.new_data.trial_statistics) == 3 * 40 * 2  # the build's slots, its three copies pooled
    assert report.parameters["copies"].startswith("kfunc.spin.cycles of each copy against old.c#1: old.c: +0.00%, ")
    assert report.parameters["runs"] == "old.c#1=1 new.c#1=2 old.c#2=3 new.c#2=4 old.c#3=5 new.c#3=6"
    assert report.parameters["seed"] == 0 and report.parameters["design"].startswith("3 copies of each build")


def test_stored_copies_labels_give_back_their_builds() -> None:
    labels = [copy_label(build, copy) for copy in (1, 2, 3) for build in ("old.c", "new.c")]
    assert labels[:2] == ["old.c#1", "new.c#1"]
    assert builds_of(labels) == (("old.c", "new.c"), (0, 1, 0, 1, 0, 1))
    assert builds_of(["a#b.c#2", "x.c#1", "a#b.c#1", "x.c#2"]) == (("a#b.c", "x.c"), (0, 1, 0, 1))


@pytest.mark.parametrize("labels", [
    [],
    ["old.c", "new.c"],  # one load each: nothing to regroup
    ["old.c#1", "old.c#2"],  # one build
    ["old.c#1", "new.c#1"],  # one copy each: no spread between copies
    ["old.c#1", "new.c#1", "old.c#2", "new.c#3"],  # not the same copies of each
    ["old.c#1", "new.c#1", "old.c#2"],
    ["old.c#01", "new.c#01", "old.c#2", "new.c#2"],
    ["old.c#2", "new.c#2", "old.c#3", "new.c#3"],  # no first copy
    ["loops=1", "loops=2"],
])
def test_labels_that_are_not_copies_of_builds_are_left_alone(labels: list[str]) -> None:
    assert builds_of(labels) is None


def test_the_copies_matrix_is_scipys_t_test_between_builds() -> None:
    copies = [[0.0, 0.004, -0.003], [0.095, 0.091, 0.099], [0.001, -0.002, 0.003]]
    slots = [[1000.0, 1001.0, 999.0], [1100.0, 1098.0, 1101.0], [1000.5, 999.5, 1000.0]]
    matrix = copies_sensitivity_matrix(["a.c", "b.c", "c.c"], copies, slots)
    for i, j in ((0, 1), (0, 2), (1, 2)):
        reference = stats.ttest_ind(copies[i], copies[j], equal_var=True).pvalue
        assert matrix.paired_p[i, j] == matrix.paired_p[j, i] == pytest.approx(reference, rel=1e-9)
        assert matrix.ks_p[i, j] == pytest.approx(stats.ks_2samp(slots[i], slots[j]).pvalue, rel=1e-9)
    assert matrix.paired_p[0, 1] < 1e-4 and matrix.paired_p[0, 2] > 0.5


def test_the_copies_matrix_diagonal_is_odd_against_even_copies() -> None:
    """Copies 1 and 3 against copy 2: a side of one value adds no spread, 1 degree of freedom,
    where Student's t is Cauchy: p = 1 - 2 atan(|t|) / pi."""
    own = [0.002, -0.001, 0.004]
    matrix = copies_sensitivity_matrix(["a.c", "b.c"], [own, [0.1, 0.1, 0.1]], [[1.0], [1.1]])
    pooled = ((own[0] - (own[0] + own[2]) / 2) ** 2 + (own[2] - (own[0] + own[2]) / 2) ** 2) / 1
    t = (own[1] - (own[0] + own[2]) / 2) / math.sqrt(pooled * (1 / 2 + 1))
    assert matrix.paired_p[0, 0] == pytest.approx(1 - 2 * math.atan(abs(t)) / math.pi, rel=1e-9)
    two = copies_sensitivity_matrix(["a.c", "b.c"], [[0.0, 0.001], [0.1, 0.1]], [[1.0], [1.1]])
    assert math.isnan(two.paired_p[0, 0]) and math.isnan(two.ks_p[0, 0])  # two copies: no split
