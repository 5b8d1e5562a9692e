"""Verdicts on counts: instructions per operation, which a counter gives exactly.

A deterministic metric needs no significance test. Each side is one or more runs, each run
its samples' counts per operation. A side's counts *repeat* when every sample of every run
counted the same (two samples or more), or, where samples differ (a function whose path
depends on its inputs), when every run's total did (two runs or more): the side's count is
then a number, not an estimate. When both sides repeat, the verdict is exact:

- ``no change`` only when the two counts are equal;
- otherwise ``regression`` or ``improvement`` by the metric's direction, with the exact
  change (the interval is that one point).

When a side's counts do not repeat (interrupts inside the counted regions, a counter that
sees the rest of the system, a program that does not run the same way twice), they are
judged like any other metric (``kbench.compare.judge``: Mann-Whitney and the Hodges-Lehmann
interval) over the runs' totals when each side has ``MIN_RUNS_TO_JUDGE`` runs or more, else
over the samples, and the verdict says why they varied.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.compare.judge import compare_trials
from kbench.compare.verdict import (
    IMPROVEMENT,
    INCONCLUSIVE,
    LOWER_IS_BETTER,
    NO_CHANGE,
    REGRESSION,
    Verdict,
    check_direction,
)

REASON_EXACT = "exact"
"""The first word of an exact verdict's reason."""
REASON_VARIED = "counts-varied"
"""The first word of the reason of a verdict on counts that did not repeat."""
EXACT_DESIGN = "exact counts: no statistical test (every count of each side repeated)"
MIN_RUNS_TO_JUDGE = 3
MIN_SAMPLES_TO_JUDGE = 5


@dataclass(frozen=True, eq=False)
class SideCounts:
    """One side's counts per operation: one array per run, its samples in order."""

    runs: tuple[NDArray[np.float64], ...]

    @classmethod
    def of(cls, runs: Sequence[ArrayLike]) -> SideCounts:
        arrays = tuple(np.asarray(run, dtype=np.float64) for run in runs)
        return cls(tuple(a for a in arrays if a.size))

    @property
    def values(self) -> NDArray[np.float64]:
        return np.concatenate(self.runs) if self.runs else np.empty(0)

    @property
    def run_means(self) -> NDArray[np.float64]:
        """Each run's count per operation: the mean over its samples (its total / its operations)."""
        return np.array([float(np.mean(run)) for run in self.runs])

    @property
    def samples_repeat(self) -> bool:
        """Every sample of every run counted the same, and there are two samples or more."""
        values = self.values
        return values.size >= 2 and bool(np.all(values == values[0]))

    @property
    def runs_repeat(self) -> bool:
        """Two runs or more, and every run's count per operation is the same."""
        means = self.run_means
        return means.size >= 2 and bool(np.all(means == means[0]))

    @property
    def repeats(self) -> bool:
        return self.samples_repeat or self.runs_repeat

    @property
    def count(self) -> float:
        """The side's count per operation: the mean of its runs' (exact when the counts repeat)."""
        means = self.run_means
        return float(np.mean(means)) if means.size else math.nan

    def how(self) -> str:
        """How the side's counts repeated, in words (for an exact verdict's reason)."""
        if self.samples_repeat:
            return f"all {self.values.size} samples equal"
        if self.runs_repeat:
            return f"samples differ, all {len(self.runs)} runs' totals equal"
        spread = self.run_means if len(self.runs) >= 2 else self.values
        return f"varied {_fmt(float(np.min(spread)))}…{_fmt(float(np.max(spread)))}"


def _fmt(value: float) -> str:
    """A count per operation: a whole number as it is, others to 10 significant digits."""
    if not math.isfinite(value):
        return "n/a"
    return f"{value:.0f}" if value == int(value) else f"{value:.10g}"


def exact_change_pct(base: float, new: float) -> float:
    return 100.0 * (new - base) / base if base else math.nan


def exact_verdict(base: float, new: float, direction: str) -> str:
    """``no change`` only for equal counts; otherwise worse (by ``direction``) is a regression."""
    check_direction(direction)
    if new == base:
        return NO_CHANGE
    worse = new > base if direction == LOWER_IS_BETTER else new < base
    return REGRESSION if worse else IMPROVEMENT


def judge_counts(
    base: SideCounts, new: SideCounts, *, direction: str, alpha: float = 0.05, margin: float | None = None,
    why_varied: str = "", metric: str = "", unit: str = "instructions",
) -> Verdict:
    """The verdict of ``new`` against ``base`` (module docstring): exact when both sides' counts
    repeat, else statistical with the reason they varied (``why_varied``: the counter's)."""
    trials = (len(base.runs), len(new.runs))
    if not base.runs or not new.runs:
        return _untested(metric, unit, direction, base, new, trials, alpha, "empty: a side has no counts")
    if base.repeats and new.repeats:
        b, n = base.count, new.count
        change = exact_change_pct(b, n)
        verdict = exact_verdict(b, n, direction)
        reason = (f"{REASON_EXACT}: {_fmt(b)} → {_fmt(n)} {unit} per operation "
                  f"({'equal' if n == b else f'{n - b:+.10g}, {change:+.4f}%'}); "
                  f"base: {base.how()}, new: {new.how()}")
        return Verdict(
            metric=metric, unit=unit, direction=direction, base_median=b, new_median=n, change_pct=change,
            ci_pct=(change, change), hl_change_pct=change, p_value=1.0 if n == b else 0.0,
            p_value_unadjusted=1.0 if n == b else 0.0, ks_p_value=math.nan, test_method="exact counts",
            min_attainable_p=0.0, verdict=verdict, reason=reason, trials=trials, alpha=alpha,
            confidence=1.0 - alpha, margin_pct=None, design=EXACT_DESIGN, tested=False,
        )
    by_runs = min(trials) >= MIN_RUNS_TO_JUDGE
    base_values = base.run_means if by_runs else base.values
    new_values = new.run_means if by_runs else new.values
    unit_of = "runs' counts" if by_runs else "samples' counts"
    if min(base_values.size, new_values.size) < (MIN_RUNS_TO_JUDGE if by_runs else MIN_SAMPLES_TO_JUDGE):
        return _untested(metric, unit, direction, base, new, trials, alpha,
                         f"{REASON_VARIED}: too few counts to judge ({base_values.size} and {new_values.size}); "
                         f"{why_varied}")
    judged = compare_trials(base_values, new_values, direction=direction, alpha=alpha, margin=margin,
                            min_trials=2, metric=metric, unit=unit)
    varied = [f"base {base.how()}" if not base.repeats else "", f"new {new.how()}" if not new.repeats else ""]
    why = f"{REASON_VARIED}: the counts did not repeat ({'; '.join(v for v in varied if v)}): {why_varied}"
    return replace(judged, reason=f"{why}; judged over the {unit_of}: {judged.reason}",
                   design=f"counts judged statistically over the {unit_of} (Mann-Whitney)")


def _untested(
    metric: str, unit: str, direction: str, base: SideCounts, new: SideCounts, trials: tuple[int, int], alpha: float,
    reason: str,
) -> Verdict:
    b, n = base.count, new.count
    return Verdict(
        metric=metric, unit=unit, direction=direction, base_median=b, new_median=n,
        change_pct=exact_change_pct(b, n) if math.isfinite(b) and math.isfinite(n) else math.nan,
        ci_pct=(math.nan, math.nan), hl_change_pct=math.nan, p_value=math.nan, p_value_unadjusted=math.nan,
        ks_p_value=math.nan, test_method="none", min_attainable_p=math.nan, verdict=INCONCLUSIVE, reason=reason,
        trials=trials, alpha=alpha, confidence=1.0 - alpha, margin_pct=None, tested=False,
    )


def decided(sides: Sequence[SideCounts]) -> bool:
    """True when every side's counts repeat: more runs would change nothing."""
    return all(side.repeats for side in sides)


def aa_halves(side: SideCounts) -> tuple[SideCounts, SideCounts]:
    """A side split in two for an A/A comparison with itself: its runs even against odd when each
    run is one count, else every run's samples even against odd."""
    if len(side.runs) >= 2 and all(run.size == 1 for run in side.runs):
        return SideCounts(side.runs[0::2]), SideCounts(side.runs[1::2])
    return (SideCounts.of([run[0::2] for run in side.runs]), SideCounts.of([run[1::2] for run in side.runs]))


@dataclass(frozen=True, eq=False)
class CountsMatrix:
    """Every pair of configurations judged on counts: ``verdicts[i][j]`` is column ``j`` against
    row ``i`` (base), ``change_pct[i, j]`` its change; the diagonal is each configuration's A/A
    split (``aa_halves``): change 0 exactly when its counts repeat."""

    names: tuple[str, ...]
    counts: tuple[float, ...]
    change_pct: NDArray[np.float64]
    verdicts: tuple[tuple[str, ...], ...]
    exact: NDArray[np.bool_]

    def to_dict(self) -> dict[str, object]:
        return {"names": list(self.names), "counts": list(self.counts),
                "change_pct": [[None if not math.isfinite(v) else float(v) for v in row] for row in self.change_pct],
                "verdicts": [list(row) for row in self.verdicts], "exact": self.exact.tolist()}


def counts_matrix(
    names: Sequence[str], sides: Sequence[SideCounts], *, direction: str, alpha: float = 0.05, why_varied: str = "",
) -> CountsMatrix:
    """``CountsMatrix`` of ``sides`` (one per name)."""
    size = len(sides)
    change = np.full((size, size), math.nan)
    exact = np.zeros((size, size), dtype=bool)
    verdicts: list[list[str]] = []
    for i, base in enumerate(sides):
        row = []
        for j, new in enumerate(sides):
            if i == j and base.repeats:  # its halves count the same: that is what repeating is
                change[i, j], exact[i, j] = 0.0, True
                row.append(NO_CHANGE)
                continue
            first, second = aa_halves(base) if i == j else (base, new)
            verdict = judge_counts(first, second, direction=direction, alpha=alpha, why_varied=why_varied)
            change[i, j] = verdict.change_pct
            exact[i, j] = verdict.reason.startswith(REASON_EXACT)
            row.append(verdict.verdict)
        verdicts.append(row)
    return CountsMatrix(tuple(names), tuple(side.count for side in sides), change,
                        tuple(tuple(row) for row in verdicts), exact)
