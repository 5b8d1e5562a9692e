"""compare_trials: judge two sets of trial statistics of one metric (fixed design).

What is computed (base x = A, new y = B, one statistic per trial, e.g. from
``trial_statistic``):

- change_pct = 100 * (median(y) / median(x) - 1), type-7 medians;
- ci_pct: the Mann-Whitney inversion interval of the log ratio at 1 - alpha
  (``kbench.compare.interval``), as %;
- p_value: two-sided Mann-Whitney U (``kbench.compare.ranks``; exact without
  ties up to ``MWU_EXACT_MAX_TRIALS`` trials per side, else normal with tie and
  continuity correction; equal to scipy's ``mannwhitneyu``);
- ks_p_value: two-sided ``scipy.stats.ks_2samp(x, y)`` (method "auto"),
  alongside only: it reacts to changes of shape or spread that the rank test
  (a location test) ignores, and a warning says so when they disagree;
- the verdict by the decision table of ``kbench.compare.verdict``.
"""

from __future__ import annotations

import math
from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.compare.interval import log_shift_interval
from kbench.compare.ks import ks_2samp_p
from kbench.compare.ranks import ASYMPTOTIC, mann_whitney
from kbench.compare.thresholds import (
    DEFAULT_ALPHA,
    DEFAULT_MIN_TRIALS,
    KS_SHAPE_WARNING_ALPHA,
    MWU_EXACT_MAX_TRIALS,
    RECOMMENDED_MIN_TRIALS,
)
from kbench.compare.verdict import (
    INCONCLUSIVE,
    REASON_ALPHA_UNREACHABLE,
    REASON_EMPTY,
    REASON_INVALID,
    REASON_TOO_FEW_TRIALS,
    WARNING_ESTIMATE_OUTSIDE_CI,
    WARNING_FEW_TRIALS,
    WARNING_KS_SHAPE,
    WARNING_TEST_INTERVAL_DISAGREE,
    WARNING_TIES,
    Verdict,
    check_alpha,
    check_direction,
    check_margin,
    decide,
)
from kbench.stats.percentiles import median_of_valid

NAN = float("nan")


class _Common(TypedDict):
    metric: str
    unit: str
    direction: str
    base_median: float
    new_median: float
    change_pct: float
    trials: tuple[int, int]
    alpha: float
    confidence: float
    margin_pct: float | None
    design: str


def _side(values: ArrayLike, name: str) -> tuple[NDArray[np.float64], str | None]:
    """(array, problem): problem names the first reason the side cannot be judged."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} trial statistics must be numbers: {error}") from None
    if array.ndim != 1:
        raise ValueError(f"{name} trial statistics must be one-dimensional, got shape {array.shape}")
    if array.size == 0:
        return array, f"{REASON_EMPTY}: the {name} side has no trials"
    bad = ~(np.isfinite(array) & (array > 0))
    if np.any(bad):
        index = int(np.flatnonzero(bad)[0])
        return array, (
            f"{REASON_INVALID}: {name} trial {index} is {float(array[index])!r}; trial statistics must be "
            f"finite and positive (the change is a ratio); {int(bad.sum())} such value(s)"
        )
    return array, None


def ks_p_value(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """Two-sided ``scipy.stats.ks_2samp(x, y)`` p-value, method "auto" (``compare.ks``: the same
    value without importing scipy.stats for the sizes verdicts meet)."""
    return ks_2samp_p(x, y)


def _median(array: NDArray[np.float64], problem: str | None) -> float:
    return median_of_valid(array) if array.size and problem is None else NAN


def judge(
    base: ArrayLike,
    new: ArrayLike,
    *,
    direction: str,
    alpha: float = DEFAULT_ALPHA,
    margin: float | None = None,
    min_trials: int = DEFAULT_MIN_TRIALS,
    metric: str = "",
    unit: str = "",
    with_ks: bool = True,
    design: str = "fixed",
) -> Verdict:
    """``compare_trials`` with two more knobs for the sequential design.

    with_ks: compute the KS p-value (False leaves NaN; saves ~0.1 ms per look).
    design: recorded in ``Verdict.design``.
    """
    check_direction(direction)
    check_alpha(alpha)
    check_margin(margin)
    if min_trials < 1:
        raise ValueError(f"min_trials must be at least 1, got {min_trials}")
    margin_pct = None if margin is None else 100.0 * margin
    x, base_problem = _side(base, "base")
    y, new_problem = _side(new, "new")
    base_median, new_median = _median(x, base_problem), _median(y, new_problem)
    change_pct = 100.0 * (new_median / base_median - 1.0)
    common: _Common = {
        "metric": metric,
        "unit": unit,
        "direction": direction,
        "base_median": base_median,
        "new_median": new_median,
        "change_pct": change_pct,
        "trials": (int(x.size), int(y.size)),
        "alpha": alpha,
        "confidence": 1.0 - alpha,
        "margin_pct": margin_pct,
        "design": design,
    }

    problem = base_problem or new_problem
    if problem is not None:
        return Verdict(
            ci_pct=(NAN, NAN),
            hl_change_pct=NAN,
            p_value=NAN,
            p_value_unadjusted=NAN,
            ks_p_value=NAN,
            test_method="",
            min_attainable_p=NAN,
            verdict=INCONCLUSIVE,
            reason=problem,
            tested=False,
            **common,
        )

    test = mann_whitney(x, y)
    interval = log_shift_interval(np.log(x), np.log(y), test, alpha=alpha)
    ci_pct = interval.ratio_pct() if interval.reached else (NAN, NAN)
    hl_change_pct = float(100.0 * np.expm1(interval.estimate))
    ks_p = ks_p_value(x, y) if with_ks else NAN

    notes: list[str] = []
    smallest = min(x.size, y.size)
    tested = True
    if smallest < min_trials:
        verdict, tested = INCONCLUSIVE, False
        reason = (
            f"{REASON_TOO_FEW_TRIALS}: {x.size} base and {y.size} new trials; at least {min_trials} per side are needed"
        )
    elif test.min_attainable_p > alpha:
        verdict, tested = INCONCLUSIVE, False
        reason = (
            f"{REASON_ALPHA_UNREACHABLE}: with {x.size} and {y.size} trials the smallest p-value the "
            f"Mann-Whitney test can give is {test.min_attainable_p:.3g} > alpha {alpha:g}; add trials"
        )
    else:
        verdict, reason = decide(
            direction=direction, p_value=test.p_value, ci_pct=ci_pct, alpha=alpha, margin_pct=margin_pct
        )

    if smallest < RECOMMENDED_MIN_TRIALS:
        notes.append(
            f"{WARNING_FEW_TRIALS}: {smallest} trials on the smaller side; below {RECOMMENDED_MIN_TRIALS} one odd "
            "trial moves the interval a lot"
        )
    if test.method == ASYMPTOTIC and test.ties and max(x.size, y.size) <= MWU_EXACT_MAX_TRIALS:
        notes.append(
            f"{WARNING_TIES}: equal trial statistics; the p-value and interval use the tie-corrected normal "
            "approximation instead of the exact distribution"
        )
    if math.isfinite(ks_p) and ks_p < KS_SHAPE_WARNING_ALPHA and test.p_value > alpha:
        notes.append(
            f"{WARNING_KS_SHAPE}: Kolmogorov-Smirnov p={ks_p:.3g} < {KS_SHAPE_WARNING_ALPHA:g} while the "
            "medians do not differ significantly: the distributions differ in spread or shape"
        )
    if interval.reached:
        excludes_zero = ci_pct[0] > 0 or ci_pct[1] < 0
        if excludes_zero != (test.p_value <= alpha):
            notes.append(
                f"{WARNING_TEST_INTERVAL_DISAGREE}: p={test.p_value:.3g} and the interval disagree about "
                "significance (ties or the normal approximation); no significant verdict was given"
            )
        if not ci_pct[0] <= change_pct <= ci_pct[1]:
            notes.append(
                f"{WARNING_ESTIMATE_OUTSIDE_CI}: the ratio of medians ({change_pct:+.2f}%) lies outside the "
                f"shift interval; the two sides differ in shape, not only by a shift"
            )

    return Verdict(
        ci_pct=ci_pct,
        hl_change_pct=hl_change_pct,
        p_value=test.p_value,
        p_value_unadjusted=test.p_value,
        ks_p_value=ks_p,
        test_method=test.method,
        min_attainable_p=test.min_attainable_p,
        verdict=verdict,
        reason=reason,
        tested=tested,
        warnings=tuple(notes),
        **common,
    )


def compare_trials(
    base: ArrayLike,
    new: ArrayLike,
    *,
    direction: str,
    alpha: float = DEFAULT_ALPHA,
    margin: float | None = None,
    min_trials: int = DEFAULT_MIN_TRIALS,
    metric: str = "",
    unit: str = "",
) -> Verdict:
    """Judge base (A) against new (B): one trial statistic per trial, each side in trial order.

    direction: "lower" or "higher" is better (decides regression vs improvement).
    alpha: two-sided level of the Mann-Whitney test; the interval is at 1 - alpha.
    margin: optional equivalence margin as a fraction (0.01 = ±1%) of the ratio
      new/base - 1; it turns "not significant" into either "no change" (the interval
      lies within the margin) or "inconclusive" (too noisy), and requires a
      significant change to lie beyond it (``kbench.compare.verdict``).
    min_trials: fewer trials on a side gives "inconclusive" (too-few-trials).

    Never raises for bad trial values (empty side, NaN, inf, <= 0): those give an
    "inconclusive" verdict whose reason names the problem. Raises ``ValueError``
    for a bad direction, alpha, margin or min_trials, or input that is not a 1-D
    sequence of numbers.
    """
    return judge(
        base, new, direction=direction, alpha=alpha, margin=margin, min_trials=min_trials, metric=metric, unit=unit
    )
