"""Designs that cannot reach significance are refused before anything is measured.

- Trials (Mann-Whitney): with n trials per side the smallest two-sided p is
  2 / C(2n, n) (0.1 at 3, 0.029 at 4). A fixed design needs it <= alpha; an adaptive one
  needs its calibrated plan to have a look that can reject
  (``SequentialPlan.first_possible_stop() <= max_trials``).
- Interleaved blocks (signed-rank): with n blocks the smallest p is 2 / 2^n, and the
  last look of the spending plan tests at no more than alpha minus the plan's
  Monte-Carlo allowance; at least ``PAIRED_MIN_BLOCKS`` blocks either way.

Each check returns None or a one-line refusal naming the smallest budget that can.
"""

from __future__ import annotations

import math

from kbench.compare.boundaries import sequential_plan
from kbench.compare.ranks import min_attainable_p
from kbench.compare.spending import spendable_alpha
from kbench.compare.thresholds import PAIRED_MIN_BLOCKS

MAX_SEARCH = 200


def smallest_fixed_trials(alpha: float) -> int:
    """Fewest trials per side whose exact Mann-Whitney test can give p <= alpha."""
    for n in range(1, MAX_SEARCH):
        if min_attainable_p(n, n) <= alpha:
            return n
    return MAX_SEARCH


def smallest_adaptive_trials(alpha: float, min_trials: int) -> int:
    """Fewest ``max_trials`` whose adaptive plan (looks from ``min_trials``) has a look that can reject."""
    for n in range(max(min_trials, smallest_fixed_trials(alpha)), MAX_SEARCH):
        if sequential_plan(alpha=alpha, min_trials=min(min_trials, n), max_trials=n).first_possible_stop() <= n:
            return n
    return MAX_SEARCH


def check_trials(trials: int, *, alpha: float, adaptive: bool, min_trials: int) -> str | None:
    """None when ``trials`` per side can reach significance at ``alpha``, else the refusal."""
    best = min_attainable_p(trials, trials)
    if adaptive:
        needed = smallest_adaptive_trials(alpha, min_trials)
        if trials >= needed:
            return None
        return (f"--trials {trials} cannot reach significance at alpha {alpha:g} with adaptive stopping (the "
                f"smallest p with {trials} trials per side is {best:.3g}, and the looks share alpha); the smallest "
                f"budget that can is --trials {needed} (or --fixed --trials {smallest_fixed_trials(alpha)})")
    needed = smallest_fixed_trials(alpha)
    if trials >= needed:
        return None
    return (f"--trials {trials} cannot reach significance at alpha {alpha:g}: the smallest p-value with {trials} "
            f"trials per side is {best:.3g}; the smallest budget that can is --trials {needed}")


def smallest_blocks(alpha: float) -> int:
    """Fewest blocks whose exact signed-rank test reaches the last look's level (the whole of alpha
    less the spending plan's Monte-Carlo allowance)."""
    return max(PAIRED_MIN_BLOCKS, math.ceil(1.0 - math.log2(spendable_alpha(alpha))))


def check_blocks(blocks: int, *, alpha: float) -> str | None:
    needed = smallest_blocks(alpha)
    if blocks >= needed:
        return None
    return (f"--blocks {blocks} cannot reach significance at alpha {alpha:g}: the smallest p-value with {blocks} "
            f"blocks is {2.0 / 2.0**blocks:.3g}; the smallest budget that can is --blocks {needed}")
