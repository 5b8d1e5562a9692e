"""The verdict of one metric's comparison, and the decision table that produces it.

Decision table (``decide``). Inputs: the two-sided p-value p, the (1 - alpha)
interval [lo, hi] of the change new/base - 1 in %, alpha, and an optional equivalence
margin M (in %, the interval must lie within [-M, +M]). Rows are tried in order; the
first that applies wins.

  1. p <= alpha and 0 outside [lo, hi]          -> "regression" or "improvement"
                                                   (a real difference, said as one even
                                                   when the interval lies within +/-M: the
                                                   reason then says it is smaller than the
                                                   margin, never "no change")
  2. M given and -M <= lo and hi <= M          -> "no change"   (within +/-M, stated)
  3. otherwise                                  -> "inconclusive" (not significant, and no
                                                   margin the interval lies within: without
                                                   a margin nothing can be called "no
                                                   change"; the reason says what would
                                                   decide it: ``remedy``)

Regression vs improvement: for direction "lower" (lower is better) a change above 0 is
a regression; for "higher" a change below 0 is.

Error rates. Row 2: P(regression or improvement | no change) <= alpha. Row 1: a
TOST-like equivalence test with the (1 - alpha) interval, i.e. each one-sided test at
alpha / 2: P("no change" | |change| >= M) <= alpha / 2 (conservative).

Checks made before the table (``compare_trials``) yield "inconclusive" with a
reason: a side empty, NaN / infinite / non-positive trial statistics, fewer
than ``min_trials`` trials on a side, and alpha below the smallest p-value the
test can reach at these sizes.

Every ``reason`` and warning starts with a stable tag (the REASON_* / WARNING_*
constants) followed by a human sentence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kbench.contract.vocabulary import DIRECTIONS as DIRECTIONS
from kbench.contract.vocabulary import HIGHER_IS_BETTER as HIGHER_IS_BETTER
from kbench.contract.vocabulary import IMPROVEMENT as IMPROVEMENT
from kbench.contract.vocabulary import INCONCLUSIVE as INCONCLUSIVE
from kbench.contract.vocabulary import LOWER_IS_BETTER as LOWER_IS_BETTER
from kbench.contract.vocabulary import NO_CHANGE as NO_CHANGE
from kbench.contract.vocabulary import REGRESSION as REGRESSION
from kbench.contract.vocabulary import Direction as Direction
from kbench.contract.vocabulary import check_direction as check_direction

# Reasons (the first word of Verdict.reason).
REASON_SIGNIFICANT = "significant"
REASON_WITHIN_MARGIN = "within-margin"
REASON_NOT_SIGNIFICANT = "not-significant"
SMALLER_THAN_MARGIN = "the change is smaller than the"
REASON_TOO_NOISY = "too-noisy"
REASON_EMPTY = "empty"
REASON_INVALID = "invalid-values"
REASON_TOO_FEW_TRIALS = "too-few-trials"
REASON_ALPHA_UNREACHABLE = "alpha-unreachable"
REASON_BUDGET_EXHAUSTED = "budget-exhausted"
REASON_MULTIMODAL = "multimodal"

# Warnings (the first word of each Verdict.warnings entry).
WARNING_FEW_TRIALS = "few-trials"
WARNING_TIES = "ties"
WARNING_KS_SHAPE = "ks-shape"
WARNING_TEST_INTERVAL_DISAGREE = "test-interval-disagree"
WARNING_ESTIMATE_OUTSIDE_CI = "estimate-outside-ci"
WARNING_MODES = "modes"


def check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha!r}")


def check_margin(margin: float | None) -> None:
    if margin is not None and not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a positive fraction (0.01 means +/-1%), got {margin!r}")


def _pct(value: float) -> str:
    return f"{value:+.2f}%" if math.isfinite(value) else "n/a"


REMEDY = "more measurements or less noise are needed"
"""What ``decide`` says would decide an inconclusive comparison, unless its caller knows better
(a comparison of builds on copies needs more copies, ``kbench.compare.placement``)."""


def decide(
    *,
    direction: str,
    p_value: float,
    ci_pct: tuple[float, float],
    alpha: float,
    margin_pct: float | None,
    equivalence_by_ci: bool = True,
    remedy: str = REMEDY,
) -> tuple[str, str]:
    """(verdict, reason) by the decision table of the module docstring.

    ``ci_pct`` may be (NaN, NaN) (no interval at this level): only row 3 applies, and the
    reason prints the interval as ``n/a``. ``equivalence_by_ci=False`` skips row 2: the caller
    decides equivalence with its own test (``kbench.compare.paired``).
    """
    low, high = ci_pct
    have_interval = math.isfinite(low) and math.isfinite(high)
    interval = f"CI [{_pct(low)}, {_pct(high)}]" if have_interval else "CI n/a"
    within = (margin_pct is not None and have_interval and -margin_pct <= low and high <= margin_pct)
    excludes_zero = have_interval and (low > 0 or high < 0)
    if p_value <= alpha and excludes_zero:
        worse = low > 0 if direction == LOWER_IS_BETTER else high < 0
        verdict = REGRESSION if worse else IMPROVEMENT
        reason = f"{REASON_SIGNIFICANT}: p={p_value:.3g} <= alpha {alpha:g}; {interval} excludes 0"
        if margin_pct is not None:
            beyond = low > margin_pct or high < -margin_pct
            reason += (f" and ±{margin_pct:g}%" if beyond else
                       f"; {SMALLER_THAN_MARGIN} ±{margin_pct:g}% margin" if within else
                       f"; it reaches inside ±{margin_pct:g}%, so the change may be smaller than the margin")
        return verdict, reason
    if equivalence_by_ci and within:
        return NO_CHANGE, f"{REASON_WITHIN_MARGIN}: {interval} lies within ±{margin_pct:g}%"
    if margin_pct is None:
        said = (f"p={p_value:.3g} > alpha {alpha:g}; {interval}" if p_value > alpha
                else f"p={p_value:.3g} but {interval} does not exclude 0")
        return INCONCLUSIVE, (f"{REASON_NOT_SIGNIFICANT}: {said}, and without a margin nothing can be called no "
                              f"change; {remedy}")
    return INCONCLUSIVE, (
        f"{REASON_TOO_NOISY}: p={p_value:.3g} and {interval} is too wide to tell a change from ±{margin_pct:g}%; "
        f"{remedy}"
    )


@dataclass(frozen=True)
class Verdict:
    """One metric's A/B verdict; every field is defined exactly here.

    metric, unit, direction: as in the catalog ("lower" or "higher" is better).
    base_median, new_median: type-7 medians of the trial statistics of each side
      (NaN when a side has no valid trials).
    change_pct: 100 * (new_median / base_median - 1), signed as measured; for the
      paired (interleaved-blocks) design the paired estimate, the centre of ci_pct
      (``kbench.compare.paired``).
    ci_pct: (low, high) interval of the change in % at level ``confidence``
      (Mann-Whitney inversion, ``kbench.compare.interval``); (NaN, NaN) when it
      cannot be computed or the level is unreachable at these sizes.
    hl_change_pct: the Hodges-Lehmann estimate 100 * (exp(median of pairwise
      log differences) - 1), the centre that interval belongs to.
    p_value: two-sided Mann-Whitney p (after ``adjustment`` if one is named).
    p_value_unadjusted: the same before any multiple-comparison adjustment.
    ks_p_value: two-sided Kolmogorov-Smirnov p (scipy ``ks_2samp``, method
      "auto"), reported alongside, not used for the verdict; NaN if not computed.
    test_method: "exact" or "asymptotic" (``kbench.compare.ranks``).
    min_attainable_p: the smallest p the test can give at these sizes.
    verdict: REGRESSION, IMPROVEMENT, NO_CHANGE or INCONCLUSIVE.
    reason: why, starting with a REASON_* tag.
    trials: (n_base, n_new) trial statistics used.
    alpha: the level p was compared with; confidence: the interval's level
      (1 - alpha); margin_pct: the equivalence margin in % or None.
    adjustment: None, "holm" or "bh" (``kbench.compare.multiple.adjust``).
    design: "fixed", or the sequential plan and look that produced it.
    tested: false when a check failed before the decision table (such verdicts
      are left out of multiple-comparison families).
    warnings: each starting with a WARNING_* tag.
    """

    metric: str
    unit: str
    direction: str
    base_median: float
    new_median: float
    change_pct: float
    ci_pct: tuple[float, float]
    hl_change_pct: float
    p_value: float
    p_value_unadjusted: float
    ks_p_value: float
    test_method: str
    min_attainable_p: float
    verdict: str
    reason: str
    trials: tuple[int, int]
    alpha: float
    confidence: float
    margin_pct: float | None
    adjustment: str | None = None
    design: str = "fixed"
    tested: bool = True
    warnings: tuple[str, ...] = ()

    @property
    def significant(self) -> bool:
        return self.verdict in (REGRESSION, IMPROVEMENT)

    def to_dict(self) -> dict[str, Any]:
        """Plain Python types (tuples become lists; undefined numbers stay NaN).

        Keys are the field names; ``kbench.report.comparison.metric_from_dict``
        reads this form.
        """
        return {
            "metric": self.metric,
            "unit": self.unit,
            "direction": self.direction,
            "base_median": self.base_median,
            "new_median": self.new_median,
            "change_pct": self.change_pct,
            "ci_pct": [self.ci_pct[0], self.ci_pct[1]],
            "hl_change_pct": self.hl_change_pct,
            "p_value": self.p_value,
            "p_value_unadjusted": self.p_value_unadjusted,
            "ks_p_value": self.ks_p_value,
            "test_method": self.test_method,
            "min_attainable_p": self.min_attainable_p,
            "verdict": self.verdict,
            "reason": self.reason,
            "trials": [self.trials[0], self.trials[1]],
            "alpha": self.alpha,
            "confidence": self.confidence,
            "margin_pct": self.margin_pct,
            "adjustment": self.adjustment,
            "design": self.design,
            "tested": self.tested,
            "warnings": list(self.warnings),
        }
