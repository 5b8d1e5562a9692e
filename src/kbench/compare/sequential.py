"""Adaptive stopping: feed trials pair by pair, stop as soon as the verdict is safe.

After each new (base, new) pair, from ``min_trials`` pairs on, the comparison is
judged by ``compare_trials``'s decision table at the look's nominal level
(``kbench.compare.boundaries``: p <= nominal_k, interval at 1 - nominal_k):

  table says regression / improvement          -> DIFFERENT (stop)
  table says "no change" within the margin      -> SAME      (stop; needs a margin)
  anything else, before the budget              -> CONTINUE
  anything else at max_trials pairs             -> INCONCLUSIVE (stop; reason
                                                   "budget-exhausted")

Stated error rates (for continuous trial statistics, shift model):
P(DIFFERENT | no change) <= alpha and P(SAME | |change| >= margin) <= alpha,
over all looks together (the boundary calibration and its repeated-interval
argument). Without a margin SAME is never decided: "not significant" is not
evidence of "the same".

Pure: no clock, no I/O; the engine decides the order of trials (interleave
and randomise the A/B order within each pair so that drifts cancel).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kbench.compare.boundaries import POCOCK, Boundary, SequentialPlan, sequential_plan
from kbench.compare.judge import judge
from kbench.compare.thresholds import DEFAULT_ALPHA, DEFAULT_MAX_TRIALS, DEFAULT_MIN_TRIALS
from kbench.compare.verdict import (
    IMPROVEMENT,
    INCONCLUSIVE,
    NO_CHANGE,
    REASON_BUDGET_EXHAUSTED,
    REGRESSION,
    Verdict,
    check_direction,
    check_margin,
)

DIFFERENT = "different"
SAME = "same"
CONTINUE = "continue"


@dataclass(frozen=True)
class SequentialStep:
    """The state after one pair.

    trials: pairs so far. decision: DIFFERENT, SAME, CONTINUE or INCONCLUSIVE.
    nominal_alpha: the level of this look (NaN before ``min_trials``).
    verdict: the table's verdict at this look (None before ``min_trials``); when
    the comparison stops it is final and includes the KS p-value.
    """

    trials: int
    decision: str
    nominal_alpha: float
    verdict: Verdict | None

    @property
    def done(self) -> bool:
        return self.decision != CONTINUE


class SequentialComparison:
    """Pair-by-pair comparison with a stopping rule that keeps its error rates (module docstring).

    Usage: ``step = comparison.add(base_trial, new_trial)`` until ``step.done``;
    ``step.verdict`` is then the answer. ``plan`` shows the looks and levels.
    """

    def __init__(
        self,
        *,
        direction: str,
        alpha: float = DEFAULT_ALPHA,
        margin: float | None = None,
        max_trials: int = DEFAULT_MAX_TRIALS,
        min_trials: int = DEFAULT_MIN_TRIALS,
        boundary: Boundary = POCOCK,
        metric: str = "",
        unit: str = "",
    ) -> None:
        check_direction(direction)
        check_margin(margin)
        self.plan: SequentialPlan = sequential_plan(
            alpha=alpha, min_trials=min_trials, max_trials=max_trials, boundary=boundary
        )
        self.direction = direction
        self.margin = margin
        self.metric = metric
        self.unit = unit
        self.base: list[float] = []
        self.new: list[float] = []
        self.last: SequentialStep | None = None

    @property
    def done(self) -> bool:
        return self.last is not None and self.last.done

    def add(self, base: float, new: float) -> SequentialStep:
        """Add one pair of trial statistics and decide.

        Raises ``ValueError`` once done, or for a value that is not finite and
        positive (nothing is added then: re-run that pair).
        """
        if self.done:
            raise ValueError(f"the comparison already stopped ({self.last.decision if self.last else ''})")
        for name, value in (("base", base), ("new", new)):
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} trial statistic must be finite and positive, got {value!r}")
        self.base.append(float(base))
        self.new.append(float(new))
        self.last = self._look()
        return self.last

    def _look(self) -> SequentialStep:
        n = len(self.base)
        plan = self.plan
        if n < plan.min_trials:
            return SequentialStep(n, CONTINUE, float("nan"), None)
        nominal = plan.nominal_at(n)
        look = f"{plan.describe()}; look at {n} trials, nominal alpha {nominal:.4g}"
        final = n == plan.max_trials

        def verdict_with_ks(with_ks: bool) -> Verdict:
            return judge(
                self.base,
                self.new,
                direction=self.direction,
                alpha=nominal,
                margin=self.margin,
                min_trials=plan.min_trials,
                metric=self.metric,
                unit=self.unit,
                with_ks=with_ks,
                design=look,
            )

        verdict = verdict_with_ks(False)
        if verdict.verdict in (REGRESSION, IMPROVEMENT):
            decision = DIFFERENT
        elif verdict.verdict == NO_CHANGE and self.margin is not None:
            decision = SAME
        elif final:
            decision = INCONCLUSIVE
        else:
            return SequentialStep(n, CONTINUE, nominal, verdict)
        verdict = verdict_with_ks(True)
        if decision == INCONCLUSIVE:
            verdict = replace(
                verdict,
                verdict=INCONCLUSIVE,
                reason=f"{REASON_BUDGET_EXHAUSTED}: no decision after {n} trials per side ({verdict.reason})",
            )
        return SequentialStep(n, decision, nominal, verdict)
