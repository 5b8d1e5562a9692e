"""Designs that cannot reach significance are refused, naming the smallest that can."""

from __future__ import annotations

import re

from kbench.compare.boundaries import sequential_plan
from kbench.compare.budget import check_blocks, check_trials, smallest_blocks, smallest_fixed_trials
from kbench.compare.ranks import min_attainable_p


def test_three_trials_cannot_reach_five_percent() -> None:
    refusal = check_trials(3, alpha=0.05, adaptive=False, min_trials=3)
    assert refusal is not None and "0.1" in refusal and "--trials 4" in refusal
    assert check_trials(4, alpha=0.05, adaptive=False, min_trials=3) is None
    assert min_attainable_p(4, 4) <= 0.05 < min_attainable_p(3, 3)
    assert smallest_fixed_trials(0.01) == 5  # 2/252 = 0.0079 <= 0.01 < 2/70


def test_adaptive_refusal_names_a_budget_whose_plan_can_stop() -> None:
    refusal = check_trials(3, alpha=0.01, adaptive=True, min_trials=3)
    assert refusal is not None
    needed = int(re.search(r"the smallest budget that can is --trials (\d+)", refusal).group(1))  # type: ignore[union-attr]
    assert sequential_plan(alpha=0.01, min_trials=3, max_trials=needed).first_possible_stop() <= needed
    assert sequential_plan(alpha=0.01, min_trials=3, max_trials=needed - 1).first_possible_stop() > needed - 1


def test_blocks() -> None:
    assert smallest_blocks(0.05) == 6 and smallest_blocks(0.01) == 8
    assert "--blocks 6" in (check_blocks(5, alpha=0.05) or "")
    assert check_blocks(6, alpha=0.05) is None
