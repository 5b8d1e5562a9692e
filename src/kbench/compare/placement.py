"""Two builds of a module compared across copies of each, loaded at different addresses.

Where a module's code lands in the kernel changes its speed: two loads of one build, compared
inside one kbench.ko thread under TCG, measured up to 2 % apart with intervals ±0.1 % wide
(docs/PERFORMANCE.md, "Placement"), and on hardware code alignment and branch-predictor
aliasing do the same. So a comparison of two builds, one load each, measures the builds *and*
two placements, and its interval, which only knows the noise between blocks, says nothing of
the second. With several copies of each build, each loaded at an address of its own, the
copies are the units: a copy's value is the median over blocks of log(copy / the base's
first copy), measured precisely, and the builds differ when their copies do, beyond the
spread between copies of one build.

Test: Student's two-sample t-test on the copies' log values (pooled variance, n_base +
n_new - 2 degrees of freedom), its (1 - alpha) interval for the difference of means turned
into a change in % (exp), and ``kbench.compare.verdict.decide``'s table. With K copies a side
and a spread s between copies, the interval's half-width is about t(1 - alpha/2, 2K - 2) *
s * sqrt(2 / K): with K = 3 and s = 0.6 % at alpha 0.05, ±1.4 %.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from kbench.compare.verdict import Verdict, check_alpha, check_margin, decide

COPIES_REMEDY = ("more copies are needed (--copies): a build is judged on its copies, and where a copy's code "
                 "landed moves it more than more blocks can average away")
TEST_METHOD = "student-t on copies"
MIN_COPIES = 2
"""Copies a side needs for a spread between them (and a t-test with >= 2 degrees of freedom)."""


COPY_SEPARATOR = "#"


def copy_label(build: str, copy: int) -> str:
    """The label of copy ``copy`` (from 1) of ``build``: ``FILE#COPY``."""
    return f"{build}{COPY_SEPARATOR}{copy}"


def builds_of(labels: Sequence[str]) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """(builds in order of first appearance, each label's build) where ``labels`` are the copies
    of two or more builds, the same copies of each (``copy_label``: 1..K, K >= MIN_COPIES), as a
    comparison on copies stores its sides; else None."""
    parsed = [label.rpartition(COPY_SEPARATOR) for label in labels]
    if not labels or any(not sep or not copy.isdigit() or copy.startswith("0") for _, sep, copy in parsed):
        return None
    builds = tuple(dict.fromkeys(build for build, _, _ in parsed))
    copies = [sorted(int(copy) for build, _, copy in parsed if build == name) for name in builds]
    if len(builds) < 2 or copies[0] != list(range(1, len(copies[0]) + 1)) or len(copies[0]) < MIN_COPIES:
        return None
    if any(other != copies[0] for other in copies[1:]):
        return None
    return builds, tuple(builds.index(build) for build, _, _ in parsed)


def copy_value(log_ratios: Sequence[float] | np.ndarray) -> float:
    """One copy's value: the median over blocks of log(copy / base's first copy) (NaN blocks left out)."""
    values = np.asarray(log_ratios, dtype=np.float64)
    values = values[np.isfinite(values)]
    return float(np.median(values)) if values.size else math.nan


def _squares(values: np.ndarray) -> float:
    """The sum of squared deviations from the mean."""
    return float(np.sum((values - values.mean()) ** 2))


def t_interval(
    base: Sequence[float] | np.ndarray, new: Sequence[float] | np.ndarray, alpha: float,
) -> tuple[float, float, float, float]:
    """(mean(new) - mean(base), low, high, two-sided p) of Student's pooled two-sample t-test (a
    side of one value adds no spread of its own; the two need three values at least)."""
    from scipy import stats

    a = np.asarray(base, dtype=np.float64)
    b = np.asarray(new, dtype=np.float64)
    df = a.size + b.size - 2
    if a.size < 1 or b.size < 1 or df < 1:
        raise ValueError(f"a t-test needs a value on each side and three in all, got {a.size} and {b.size}")
    difference = float(b.mean() - a.mean())
    pooled = (_squares(a) + _squares(b)) / df
    error = math.sqrt(pooled * (1 / a.size + 1 / b.size))
    if error == 0.0:
        p = 1.0 if difference == 0.0 else 0.0
        return difference, difference, difference, p
    critical = float(stats.t.ppf(1 - alpha / 2, df))
    p = float(2 * stats.t.sf(abs(difference) / error, df))
    return difference, difference - critical * error, difference + critical * error, p


def judge_copies(
    base: Sequence[float],
    new: Sequence[float],
    *,
    base_scale: float,
    metric: str,
    unit: str,
    direction: str,
    alpha: float,
    margin: float | None,
    design: str,
) -> Verdict:
    """The verdict on two builds from their copies' log values (``copy_value``), relative to
    the base's first copy, whose median slot value is ``base_scale``."""
    check_alpha(alpha)
    check_margin(margin)
    if len(base) < MIN_COPIES or len(new) < MIN_COPIES:
        raise ValueError(f"each build needs at least {MIN_COPIES} copies, got {len(base)} and {len(new)}")
    if not all(math.isfinite(v) for v in (*base, *new)):
        raise ValueError("a copy has no judged block")
    difference, low, high, p = t_interval(base, new, alpha)
    change = 100.0 * math.expm1(difference)
    ci = (100.0 * math.expm1(low), 100.0 * math.expm1(high))
    margin_pct = 100.0 * margin if margin is not None else None
    verdict, reason = decide(direction=direction, p_value=p, ci_pct=ci, alpha=alpha, margin_pct=margin_pct,
                             remedy=COPIES_REMEDY)
    spread = max(float(np.ptp(base)), float(np.ptp(new)))
    return Verdict(
        metric=metric, unit=unit, direction=direction,
        base_median=base_scale * math.exp(float(np.mean(base))),
        new_median=base_scale * math.exp(float(np.mean(new))),
        change_pct=change, ci_pct=ci, hl_change_pct=change, p_value=p, p_value_unadjusted=p,
        ks_p_value=math.nan, test_method=TEST_METHOD, min_attainable_p=0.0, verdict=verdict,
        reason=f"{reason}; copies of one build {100.0 * math.expm1(spread):.2f}% apart at most",
        trials=(len(base), len(new)), alpha=alpha, confidence=1 - alpha, margin_pct=margin_pct, design=design,
    )
