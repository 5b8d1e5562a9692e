"""Verdicts from interleaved blocks: the paired log-ratio of each block, signed-rank tested.

Design (``kbench.engine.interleave``): the measurement is cut into blocks; a block runs
each side twice in a mirrored random order (ABBA or BAAB for two sides), one short slot
at a time, so a drift that is linear over the block hits both sides equally and slower
changes of the machine cancel between the two sides of the block. Per block and new
side:

    d = log(mean of the new side's slots in the block) - log(mean of the base side's)

and the verdict is built from d_1..d_n (``judge_blocks``):

- p_value: two-sided Wilcoxon signed-rank test of d against 0
  (``kbench.compare.signed_ranks``). Because each block's order is drawn at random and
  swapping the sides of a block turns d into -d, the test's null distribution holds by
  design (a randomization test): whatever the machine does - drift, spikes, heavy
  tails, switching between speeds - identical sides are called different with
  probability <= alpha. Simulations (tests, benchmarks/compare_power.py) agree; the
  same simulations show a t-test on d losing its error rate under spikes and flips.
- ci_pct: the signed-rank test inverted (Walsh averages) at 1 - alpha, as %; for a
  "no change" decided by equivalence, the 1 - 2 alpha_eq interval that decided it;
- change_pct: the paired estimate 100 (exp(median of the Walsh averages) - 1) - the
  centre of that interval, not the ratio of the sides' medians (which carries drift);
- base_median / new_median: medians of each side's slot statistics (for the table);
- ks_p_value: ``scipy.stats.ks_2samp`` of the slot statistics, alongside only;
- the verdict: the decision table of ``kbench.compare.verdict``.

Checks before the table give "inconclusive" with a reason: values that are not finite
and positive, fewer than ``PAIRED_MIN_BLOCKS`` blocks, or alpha below the smallest p
the test can reach with these blocks.

Sequential use (``PairedSequential``): looks at growing block counts share alpha
through ``kbench.compare.spending``; each look judges with its nominal level. With a
margin, "no change" has its own one-sided O'Brien-Fleming-type boundary (two one-sided
tests, overall P("no change" | |change| >= margin) <= alpha), which keeps most of its
alpha for the late looks where an interval can first fit the margin. A difference whose
interval lies within the margin stops no look but the last: the equivalence test decides it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.compare.judge import ks_p_value
from kbench.compare.modes import side_modes
from kbench.compare.noise_margin import NoiseMargin, noise_margin
from kbench.compare.sequential import CONTINUE, DIFFERENT, SAME, SequentialStep
from kbench.compare.signed_ranks import EXACT, SignedRankTest, signed_rank_test, walsh_interval
from kbench.compare.spending import SpendingBoundary
from kbench.compare.thresholds import (
    DEFAULT_ALPHA,
    DEFAULT_MARGIN,
    NOISE_MARGIN_MIN_BLOCKS,
    PAIRED_LOOK_MIN_BLOCKS,
    PAIRED_MIN_BLOCKS,
)
from kbench.compare.verdict import (
    IMPROVEMENT,
    INCONCLUSIVE,
    NO_CHANGE,
    REASON_ALPHA_UNREACHABLE,
    REASON_BUDGET_EXHAUSTED,
    REASON_INVALID,
    REASON_TOO_FEW_TRIALS,
    REASON_WITHIN_MARGIN,
    REGRESSION,
    WARNING_MODES,
    WARNING_TIES,
    Verdict,
    check_alpha,
    check_direction,
    check_margin,
    decide,
)
from kbench.stats.percentiles import median_of_valid

NAN = float("nan")
SIGNED_RANK = "wilcoxon signed-rank on block log-ratios"


def block_log_ratios(
    base_blocks: Sequence[Sequence[float]], new_blocks: Sequence[Sequence[float]]
) -> NDArray[np.float64]:
    """d per block: log(mean(new slots)) - log(mean(base slots)); blocks in order, same count."""
    if len(base_blocks) != len(new_blocks):
        raise ValueError(f"{len(base_blocks)} base blocks but {len(new_blocks)} new blocks")
    base = np.array([float(np.mean(b)) if len(b) else NAN for b in base_blocks])
    new = np.array([float(np.mean(b)) if len(b) else NAN for b in new_blocks])
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios: NDArray[np.float64] = np.log(new) - np.log(base)
    return ratios


def _values(values: ArrayLike, name: str) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    return array


def modes_warning(base: NDArray[np.float64], new: NDArray[np.float64], unit: str) -> str | None:
    """A WARNING_MODES sentence when either side's values fall into two or more clusters."""
    found = side_modes(base, new)
    if not found:
        return None
    described = "; ".join(f"{name}: {modes.describe(unit)}" for name, modes in found.items())
    return (f"{WARNING_MODES}: the machine switched between speeds ({described}); each block compares "
            "the two sides at the same time, so the verdict stands for the mix of modes both sides met")


def judge_blocks(
    d: ArrayLike,
    *,
    base_values: ArrayLike,
    new_values: ArrayLike,
    direction: str,
    alpha: float = DEFAULT_ALPHA,
    margin: float | None = None,
    min_blocks: int = PAIRED_MIN_BLOCKS,
    metric: str = "",
    unit: str = "",
    design: str = SIGNED_RANK,
    with_ks: bool = True,
    equivalence_alpha: float | None = None,
) -> Verdict:
    """The verdict of the module docstring for block log-ratios ``d`` (one per block, in order).

    base_values / new_values: every slot statistic of each side (medians, KS, modes).
    equivalence_alpha: when given with a margin, "no change" is decided first by two
    one-sided tests at this level each (the two-sided 1 - 2 equivalence_alpha interval
    within +/-margin); that interval is then the verdict's ci_pct and confidence. 0 means
    this look cannot decide equivalence. None: the 1 - alpha interval decides (row 1).
    Never raises for bad measured values (they give "inconclusive" with a reason);
    raises ``ValueError`` for bad parameters or input that is not 1-D.
    """
    check_direction(direction)
    check_alpha(alpha)
    check_margin(margin)
    margin_pct = None if margin is None else 100.0 * margin
    ratios = _values(d, "block log-ratios")
    base, new = _values(base_values, "base values"), _values(new_values, "new values")
    valid_sides = all(v.size and np.all(np.isfinite(v) & (v > 0)) for v in (base, new))
    base_median = median_of_valid(base) if valid_sides else NAN
    new_median = median_of_valid(new) if valid_sides else NAN
    common = {
        "metric": metric, "unit": unit, "direction": direction, "base_median": base_median,
        "new_median": new_median, "trials": (int(base.size), int(new.size)), "alpha": alpha,
        "confidence": 1.0 - alpha, "margin_pct": margin_pct, "design": design,
    }
    problem = None
    if not valid_sides or not np.all(np.isfinite(ratios)):
        problem = (f"{REASON_INVALID}: measured values must be finite and positive on both sides "
                   "(the change is a ratio)")
    elif ratios.size < min_blocks:
        problem = f"{REASON_TOO_FEW_TRIALS}: {ratios.size} blocks; at least {min_blocks} are needed"
    if problem is not None:
        return Verdict(change_pct=NAN, ci_pct=(NAN, NAN), hl_change_pct=NAN, p_value=NAN, p_value_unadjusted=NAN,
                       ks_p_value=NAN, test_method="", min_attainable_p=NAN, verdict=INCONCLUSIVE, reason=problem,
                       tested=False, **common)  # type: ignore[arg-type]

    test = signed_rank_test(ratios)
    whole = test.n_used == ratios.size
    interval = walsh_interval(ratios, alpha, exact=test.method == EXACT and whole, sigma=test.sigma if whole else None)
    ci_pct = interval.ratio_pct() if interval.reached else (NAN, NAN)
    change_pct = float(100.0 * math.expm1(interval.estimate))
    notes: list[str] = []
    tested = True
    if test.min_attainable_p > alpha:
        verdict, tested = INCONCLUSIVE, False
        reason = (f"{REASON_ALPHA_UNREACHABLE}: with {ratios.size} blocks the smallest p-value the signed-rank "
                  f"test can give is {test.min_attainable_p:.3g} > alpha {alpha:g}; more blocks are needed")
    else:
        verdict, reason = decide(direction=direction, p_value=test.p_value, ci_pct=ci_pct, alpha=alpha,
                                 margin_pct=margin_pct, equivalence_by_ci=equivalence_alpha is None)
        # a real difference is said as one, even inside the margin: equivalence decides the rest
        equivalent = None if verdict in (REGRESSION, IMPROVEMENT) else _equivalence(ratios, test, equivalence_alpha,
                                                                                    margin_pct)
        if equivalent is not None:
            ci_pct, confidence, reason = equivalent
            verdict = NO_CHANGE
            common["confidence"] = confidence
    if test.ties and test.method != EXACT:
        notes.append(f"{WARNING_TIES}: equal block log-ratios; the p-value and interval use the tie-corrected "
                     "normal approximation")
    modes = modes_warning(base, new, unit)
    if modes is not None:
        notes.append(modes)
    return Verdict(
        change_pct=change_pct, ci_pct=ci_pct, hl_change_pct=change_pct, p_value=test.p_value,
        p_value_unadjusted=test.p_value, ks_p_value=ks_p_value(base, new) if with_ks else NAN,
        test_method=f"signed-rank {test.method}", min_attainable_p=test.min_attainable_p, verdict=verdict,
        reason=reason, tested=tested, warnings=tuple(notes), **common,  # type: ignore[arg-type]
    )


def _equivalence(
    ratios: NDArray[np.float64], test: SignedRankTest, alpha: float | None, margin_pct: float | None,
) -> tuple[tuple[float, float], float, str] | None:
    """(interval, its confidence, reason) when two one-sided tests at ``alpha`` put the change within the margin."""
    if alpha is None or margin_pct is None or not 0.0 < alpha < 0.5:
        return None
    whole = test.n_used == ratios.size
    interval = walsh_interval(ratios, 2.0 * alpha, exact=test.method == EXACT and whole,
                              sigma=test.sigma if whole else None)
    if not interval.reached:
        return None
    low, high = interval.ratio_pct()
    if not (-margin_pct <= low and high <= margin_pct):
        return None
    confidence = 1.0 - 2.0 * alpha
    return (low, high), confidence, (
        f"{REASON_WITHIN_MARGIN}: the {_percent(confidence)}% CI [{low:+.2f}%, {high:+.2f}%] lies within "
        f"±{margin_pct:g}% (two one-sided tests, each at level {alpha:.3g})")


def _percent(confidence: float) -> str:
    """A confidence in % with the digits that tell it from 100 (94.9, 99.99, 99.9989)."""
    digits = 1
    while digits < 6 and round(100.0 * confidence, digits) >= 100.0:
        digits += 1
    return f"{100.0 * confidence:.{digits}f}"


EQUIVALENCE_SPENDING = "obrien-fleming"
EQUIVALENCE_BY_INTERVAL = "interval"
EQUIVALENCE_DESIGNS = (EQUIVALENCE_SPENDING, "pocock", EQUIVALENCE_BY_INTERVAL)
"""How a sequential comparison decides "no change": its own one-sided spending (O'Brien-Fleming- or
Pocock-type), or the two-sided interval of the difference test ("interval", the design before
issue 10's second pass; kept for benchmarks/equivalence_power.py)."""


class PairedSequential:
    """Looks at growing numbers of blocks with alpha spending; stops once the verdict is safe.

    ``step = comparison.look(d, base_values, new_values, fraction)`` after each batch of
    blocks, ``fraction`` the share of the time budget used (>= 1: the last look).
    Decisions as in ``kbench.compare.sequential``: DIFFERENT, SAME (within the margin),
    CONTINUE, or INCONCLUSIVE ("budget-exhausted") at the last look.

    ``margin_from_noise`` (with no ``margin``): the margin is measured from the blocks
    (``kbench.compare.noise_margin``) at the first look with enough of them, with the blocks
    expected at the end of the budget (blocks / fraction), and kept; ``noise`` holds it.
    """

    def __init__(
        self, *, direction: str, alpha: float = DEFAULT_ALPHA, margin: float | None = None,
        metric: str = "", unit: str = "", equivalence: str = EQUIVALENCE_SPENDING, margin_from_noise: bool = False,
    ) -> None:
        check_direction(direction)
        check_margin(margin)
        if equivalence not in EQUIVALENCE_DESIGNS:
            raise ValueError(f"equivalence must be one of {', '.join(EQUIVALENCE_DESIGNS)}, got {equivalence!r}")
        self.boundary = SpendingBoundary(alpha, min_blocks=PAIRED_LOOK_MIN_BLOCKS)
        measured = margin is None and margin_from_noise
        self.equivalence = (None if (margin is None and not measured) or equivalence == EQUIVALENCE_BY_INTERVAL else
                            SpendingBoundary(alpha, min_blocks=PAIRED_LOOK_MIN_BLOCKS, sided=1,
                                             spending=equivalence))
        self.direction = direction
        self.alpha = alpha
        self.margin = margin
        self.margin_from_noise = measured
        self.noise: NoiseMargin | None = None
        self.judged_margin = margin  # the margin it judges at now: the latest look's (``margin_at``)
        self.metric = metric
        self.unit = unit
        self.last: SequentialStep | None = None

    def measure_margin(self, d: ArrayLike, expected_blocks: int, *, final: bool) -> None:
        """Set ``margin`` from block log-ratios ``d`` (``kbench.compare.noise_margin``) when it is
        to be measured and is not yet; a last look (``final``) takes whatever blocks there are."""
        if not self.margin_from_noise or self.noise is not None:
            return
        self.noise = noise_margin(d, expected_blocks, alpha=self.alpha,
                                  min_blocks=1 if final else NOISE_MARGIN_MIN_BLOCKS)
        if self.noise is not None:
            self.margin = self.judged_margin = self.noise.margin

    @property
    def done(self) -> bool:
        return self.last is not None and self.last.done

    def margin_at(self, final: bool) -> float | None:
        """The margin a look judges against. A margin measured from the noise is what the end of
        the budget can resolve; a look before the last holds the floor (``DEFAULT_MARGIN``). An
        early interval that fits the wider margin only says the change is smaller than what
        this noise resolves by the end: stopping there called a real +0.5 % "no change within
        ±0.8 %" after 60 % of the budget in 2 of 20 comparisons (benchmarks/sensitivity.py),
        where going on to the last look could still find it."""
        if self.noise is None or final or self.margin is None:
            return self.margin
        return min(self.margin, DEFAULT_MARGIN)

    def describe_margin(self) -> str | None:
        """The measured margin (None when it was given or not measured) and, when the comparison
        stopped before its last look, the floor that look held."""
        if self.noise is None:
            return None
        text = self.noise.describe()
        if self.judged_margin is not None and self.judged_margin < self.noise.margin:
            text += f"; the look that stopped came before the last and held ±{100 * self.judged_margin:g}%"
        return text

    def _inside_margin(self, ci_pct: tuple[float, float], margin: float | None) -> bool:
        """The difference test's interval lies within the margin: a change was found, but one smaller
        than the margin. An early look does not stop on it. The equivalence test, spending its own
        alpha, says "no change" later (as the fixed design's decision table does at once). Stopping
        there would name a regression of a few hundredths of a percent that the margin calls no
        change. Seen with two sides of identical work inside kbench.ko: +0.04 %, CI +0.02…+0.06 %.
        Continuing never adds a verdict of "different" that a stop would not have given. Such a
        verdict still needs a look whose difference test rejects at its spent level."""
        if margin is None:
            return False
        low, high = ci_pct
        limit = 100.0 * margin
        return math.isfinite(low) and math.isfinite(high) and -limit <= low and high <= limit

    def look(self, d: ArrayLike, base_values: ArrayLike, new_values: ArrayLike, fraction: float) -> SequentialStep:
        if self.done:
            raise ValueError("the comparison already stopped")
        ratios = _values(d, "block log-ratios")
        final = fraction >= 1.0
        blocks = int(ratios.size)
        before = self.boundary.looks[-1].blocks if self.boundary.looks else 0
        if blocks <= before and not final:
            return self.last or SequentialStep(blocks, CONTINUE, NAN, None)
        self.measure_margin(ratios, blocks if final or fraction <= 0 else math.ceil(blocks / fraction), final=final)
        margin = self.judged_margin = self.margin_at(final)
        nominal = self.boundary.look(blocks, fraction).nominal_alpha if blocks > 0 else 0.0
        look_text = f"{self.boundary.describe()}; look at {blocks} blocks, nominal alpha {nominal:.4g}"
        equivalence_alpha = None
        if self.equivalence is not None:
            equivalence_alpha = self.equivalence.look(blocks, fraction).nominal_alpha if blocks > 0 else 0.0
            look_text += (f"; equivalence: {self.equivalence.describe()}, one-sided nominal alpha "
                          f"{equivalence_alpha:.4g}")
        verdict = judge_blocks(ratios, base_values=base_values, new_values=new_values, direction=self.direction,
                               alpha=nominal if nominal > 0 else self.alpha, margin=margin,
                               metric=self.metric, unit=self.unit, design=look_text, with_ks=final,
                               equivalence_alpha=equivalence_alpha)
        if nominal <= 0.0:
            # this look spends nothing (too few blocks to reach any useful level): it cannot decide
            if not final:
                self.last = SequentialStep(blocks, CONTINUE, nominal, verdict)
                return self.last
            if verdict.tested:
                verdict = replace(verdict, verdict=INCONCLUSIVE, tested=False, reason=(
                    f"{REASON_ALPHA_UNREACHABLE}: {blocks} blocks cannot reach a decision at overall alpha "
                    f"{self.alpha:g}; at least {PAIRED_LOOK_MIN_BLOCKS} are needed"))
            self.last = SequentialStep(blocks, INCONCLUSIVE, nominal, verdict)
            return self.last
        if verdict.verdict in (REGRESSION, IMPROVEMENT) and not final and self._inside_margin(verdict.ci_pct, margin):
            decision = CONTINUE  # smaller than the margin: the equivalence test decides, at a later look
        elif verdict.verdict in (REGRESSION, IMPROVEMENT):
            decision = DIFFERENT
        elif verdict.verdict == NO_CHANGE and margin is not None:
            decision = SAME
        elif final:
            decision = INCONCLUSIVE
            if verdict.tested:
                needs = f"; {self.noise.capped_note()}" if self.noise is not None and self.noise.capped else ""
                verdict = replace(verdict, verdict=INCONCLUSIVE, reason=(
                    f"{REASON_BUDGET_EXHAUSTED}: no decision after {blocks} blocks ({verdict.reason}){needs}"))
        else:
            decision = CONTINUE
        if decision != CONTINUE and not final:
            verdict = replace(verdict, ks_p_value=ks_p_value(_values(base_values, "base values"),
                                                             _values(new_values, "new values")))
        self.last = SequentialStep(blocks, decision, nominal, verdict)
        return self.last
