"""Words with one meaning everywhere: which way is better, and what a comparison concluded."""

from __future__ import annotations

from typing import Literal

LOWER_IS_BETTER = "lower"
HIGHER_IS_BETTER = "higher"
Direction = Literal["lower", "higher"]
DIRECTIONS = (LOWER_IS_BETTER, HIGHER_IS_BETTER)

REGRESSION = "regression"
IMPROVEMENT = "improvement"
NO_CHANGE = "no change"
INCONCLUSIVE = "inconclusive"
VERDICTS = (REGRESSION, IMPROVEMENT, NO_CHANGE, INCONCLUSIVE)
SIGNIFICANT_VERDICTS = (REGRESSION, IMPROVEMENT)
"""The verdicts that say the two sides differ."""

ACKNOWLEDGED = "acknowledged"
AUTHOR_WORKING = "author working on it"
WONT_FIX = "won't fix"
TRIAGE_STATUSES = (ACKNOWLEDGED, AUTHOR_WORKING, WONT_FIX)
"""The statuses a person sets on a confirmed regression (``kbench finding N --status``), beside the
watch's own (open, fixed in, reverted in). A triaged regression no longer fails ``--fail-on``."""


def check_direction(direction: str) -> None:
    """ValueError unless ``direction`` is "lower" or "higher"."""
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be {LOWER_IS_BETTER!r} or {HIGHER_IS_BETTER!r}, got {direction!r}")
