"""Builds judged on their copies (kbench.compare.placement), against scipy's two-sample t-test."""

from __future__ import annotations

import math
from pathlib import Path

import click
import numpy as np
import pytest
from scipy import stats

from kbench.cli.module_options import DEFAULT_COPIES, module_copy_count
from kbench.compare.placement import copy_value, judge_copies, t_interval
from kbench.compare.verdict import INCONCLUSIVE, NO_CHANGE, REGRESSION
from kbench.kinds.kfunc.loaded import module_copies

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
