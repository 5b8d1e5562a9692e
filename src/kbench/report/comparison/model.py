"""The input of every comparison renderer: a report of per-metric verdicts plus its raw evidence.

A ``ComparisonReport`` is built once (from ``kbench.compare`` verdicts or by hand) and
handed to any renderer in ``kbench.report.comparison.FORMATS``. It holds plain numbers:
renderers never recompute a verdict, they only present it. Definitions:

- ``base`` / ``new``: the central value of each side in ``unit`` (the median of the
  per-trial statistics, as ``kbench.compare`` reports it).
- ``change_pct``: 100 * (new - base) / base, signed as measured (not direction-aware).
- ``ci_pct``: (low, high) confidence interval of ``change_pct`` at ``confidence``.
- ``p_value``: after the report's multiple-comparison ``correction`` when one is named.
- ``trials``: (base, new) number of trials (or interleaved slots) behind each side.
- ``design``: how the evidence was gathered and judged (trials and Mann-Whitney, or
  interleaved blocks and the signed-rank test), in words.
- ``warnings``: named cautions that travel with the verdict (``modes: ...``, ...).
- ``modes``: per side ("base", "new"), the clusters its measurements fall into when
  there are two or more (``kbench.compare.modes.Modes.to_dict`` plus ``text``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.contract.vocabulary import HIGHER_IS_BETTER as HIGHER_IS_BETTER
from kbench.contract.vocabulary import IMPROVEMENT as IMPROVEMENT
from kbench.contract.vocabulary import LOWER_IS_BETTER as LOWER_IS_BETTER
from kbench.contract.vocabulary import NO_CHANGE as NO_CHANGE
from kbench.contract.vocabulary import REGRESSION as REGRESSION
from kbench.contract.vocabulary import SIGNIFICANT_VERDICTS as SIGNIFICANT_VERDICTS
from kbench.profile.delta import ProfileDelta
from kbench.stats.percentiles import median
from kbench.stats.warmup import steady_state_index


@dataclass(frozen=True, eq=False)
class TrialSeries:
    """The per-operation values of one trial, in sample order, and where its steady state starts.

    ``steady_state_index`` is the first steady sample (``kbench.stats.warmup``); None
    means "not given": ``warmup_end`` then detects it with robust MSER-5.
    """

    values: NDArray[np.float64]
    steady_state_index: int | None = None

    @property
    def warmup_end(self) -> int:
        """Index of the first steady-state sample (given, else detected; 0 for short series)."""
        if self.steady_state_index is not None:
            return self.steady_state_index
        return steady_state_index(self.values) if self.values.size else 0


@dataclass(frozen=True, eq=False)
class SideData:
    """Raw evidence for one side of one metric; every field is optional.

    trial_statistics: the statistic each trial contributed (e.g. its median), in trial
      order; its spread gives the ``±%stddev`` columns and the Go benchmark lines.
    samples: pooled raw per-operation values for the histogram and CDF plots.
    series: the per-trial time series for the warm-up plot.
    """

    trial_statistics: tuple[float, ...] = ()
    samples: NDArray[np.float64] | None = None
    series: tuple[TrialSeries, ...] = ()

    @property
    def stddev_pct(self) -> float | None:
        """Sample stdev (ddof=1) of the trial statistics in % of their mean; None below 2 trials."""
        stats = self.trial_statistics
        if len(stats) < 2:
            return None
        mean = float(np.mean(stats))
        if mean == 0:
            return None
        return 100.0 * float(np.std(stats, ddof=1)) / abs(mean)


def side_from_trials(trials: Iterable[ArrayLike]) -> SideData:
    """Evidence for one side from its trials' raw values (one array per trial, in order).

    Trial statistic = the trial's median; samples = all trials pooled; each trial's
    steady-state index is detected with ``kbench.stats.warmup.steady_state_index``.
    """
    arrays = [np.asarray(t, dtype=np.float64) for t in trials]
    arrays = [a for a in arrays if a.size]
    return SideData(
        trial_statistics=tuple(median(a) for a in arrays),
        samples=np.concatenate(arrays) if arrays else None,
        series=tuple(TrialSeries(a, steady_state_index(a)) for a in arrays),
    )


@dataclass(frozen=True, eq=False)
class MetricComparison:
    """One metric's verdict for one (base, new) pair, as ``kbench.compare`` produces it."""

    metric: str
    unit: str
    direction: str  # LOWER_IS_BETTER or HIGHER_IS_BETTER
    base: float
    new: float
    change_pct: float
    ci_pct: tuple[float, float]
    p_value: float
    verdict: str
    trials: tuple[int, int]
    reason: str = ""
    new_label: str | None = None  # which of the report's new labels; None = the first
    base_data: SideData = field(default_factory=SideData)
    new_data: SideData = field(default_factory=SideData)
    design: str = ""
    warnings: tuple[str, ...] = ()
    modes: Mapping[str, Any] = field(default_factory=dict)
    margin_pct: float | None = None
    ns_per_unit: float | None = None
    """For a metric counted in cycles (in-kernel timing): nanoseconds per cycle at the TSC rate the
    target reported, so that ``base``/``new`` read in ns as well."""

    def in_ns(self, value: float) -> float | None:
        """``value`` (in ``unit``) in nanoseconds; None without a TSC rate."""
        return None if self.ns_per_unit is None else value * self.ns_per_unit

    @property
    def tsc_mhz(self) -> float | None:
        return None if not self.ns_per_unit else 1e3 / self.ns_per_unit

    @property
    def multimodal(self) -> bool:
        return bool(self.modes)

    @property
    def significant(self) -> bool:
        return self.verdict in SIGNIFICANT_VERDICTS

    @property
    def real_within_margin(self) -> bool:
        """A real change (a regression or improvement) whose whole interval lies within the margin: smaller
        than the change the margin says matters (``kbench.compare.verdict.decide``, row 1)."""
        low, high = self.ci_pct
        return (self.significant and self.margin_pct is not None and math.isfinite(low) and math.isfinite(high)
                and -self.margin_pct <= low and high <= self.margin_pct)

    @property
    def goodness_ratio(self) -> float | None:
        """new/base for higher-is-better metrics, base/new for lower-is-better: > 1 means better.

        new/base is 1 + change_pct / 100, the verdict's own estimate (for interleaved blocks the
        paired estimate, which the headline shows; the sides' medians carry the machine's drift),
        or the ratio of the medians when change_pct is not finite. None when either value is not
        a positive finite number (no ratio is defined).
        """
        if not (self.base > 0 and self.new > 0 and math.isfinite(self.base) and math.isfinite(self.new)):
            return None
        ratio = 1.0 + self.change_pct / 100.0 if math.isfinite(self.change_pct) else self.new / self.base
        if ratio <= 0:
            return None
        return ratio if self.direction == HIGHER_IS_BETTER else 1.0 / ratio


@dataclass(frozen=True, eq=False)
class ProfileComparison:
    """The sides' sampled profiles, as a comparison shows them (``kbench.profile``).

    deltas: one per new label, its rows against the base, sorted by growth.
    flames: each side's flame graph (label -> SVG); diff_flames: each new side's graph
      coloured by its change against the base (new label -> SVG).
    runs: the run each profile is stored with (label -> run id).
    note: how the profiles were taken (their own slots, after the timed blocks).
    """

    deltas: tuple[ProfileDelta, ...]
    flames: Mapping[str, str] = field(default_factory=dict)
    diff_flames: Mapping[str, str] = field(default_factory=dict)
    runs: Mapping[str, int] = field(default_factory=dict)
    note: str = ""

    def delta_for(self, label: str) -> ProfileDelta | None:
        return next((d for d in self.deltas if d.new_label == label), None)


@dataclass(frozen=True)
class KernelConfigDifference:
    """How a new side's kernel config differs from the base's (``kbench.kernels.diffconfig``:
    scripts/diffconfig's lines); digests are None for a kernel whose config is unknown."""

    base_label: str
    new_label: str
    base_digest: str | None
    new_digest: str | None
    lines: tuple[str, ...] = ()

    @property
    def known(self) -> bool:
        return self.base_digest is not None and self.new_digest is not None


@dataclass(frozen=True, eq=False)
class ComparisonReport:
    """Everything a comparison report shows.

    label_kind: what the labels name, in the user's words ("kernel", "commit", "program").
    context: machine and run context (kernel, CPU, governor, VM or bare metal, ...).
    parameters: the test parameters (job, trials, interleaving, ...).
    correction: the multiple-comparison correction applied to the p-values ("holm"), if any.
    confidence: the level of every ``ci_pct``.
    profile: the sides' profiles and their deltas, when the comparison profiled them.
    kernel_configs: per new side, its kernel config's difference from the base's, when the
    sides ran on kernels whose configs differ or are unknown (sides on one kernel: none).
    """

    title: str
    base_label: str
    new_labels: tuple[str, ...]
    metrics: tuple[MetricComparison, ...]
    label_kind: str = "kernel"
    context: Mapping[str, Any] = field(default_factory=dict)
    parameters: Mapping[str, Any] = field(default_factory=dict)
    correction: str | None = None
    confidence: float = 0.95
    profile: ProfileComparison | None = None
    kernel_configs: tuple[KernelConfigDifference, ...] = ()

    def __post_init__(self) -> None:
        if not self.new_labels:
            raise ValueError("a comparison report needs at least one new label")
        for m in self.metrics:
            if m.new_label is not None and m.new_label not in self.new_labels:
                raise ValueError(f"metric {m.metric}: new label {m.new_label!r} is not one of {self.new_labels}")

    def new_label_of(self, comparison: MetricComparison) -> str:
        return comparison.new_label or self.new_labels[0]

    def for_label(self, label: str) -> list[MetricComparison]:
        """The comparisons against one new label, in report order."""
        return [m for m in self.metrics if self.new_label_of(m) == label]

    def metric_names(self) -> list[str]:
        """Distinct metric names in order of first appearance."""
        return list(dict.fromkeys(m.metric for m in self.metrics))


def _trial_counts(value: Any) -> tuple[int, int]:
    if isinstance(value, Mapping):
        return int(value["base"]), int(value["new"])
    if isinstance(value, Sequence) and not isinstance(value, str):
        base, new = value
        return int(base), int(new)
    return int(value), int(value)


def _side(data: Mapping[str, Any] | SideData | None) -> SideData:
    if data is None:
        return SideData()
    if isinstance(data, SideData):
        return data
    samples = data.get("samples")
    series = []
    for s in data.get("series", ()):
        if isinstance(s, TrialSeries):
            series.append(s)
        elif isinstance(s, Mapping):
            series.append(TrialSeries(np.asarray(s["values"], dtype=np.float64), s.get("steady_state_index")))
        else:
            series.append(TrialSeries(np.asarray(s, dtype=np.float64)))
    return SideData(
        trial_statistics=tuple(float(v) for v in data.get("trial_statistics", ())),
        samples=None if samples is None else np.asarray(samples, dtype=np.float64),
        series=tuple(series),
    )


def metric_from_dict(data: Mapping[str, Any]) -> MetricComparison:
    """Build a ``MetricComparison`` from a verdict dict (``kbench.compare``'s plain form).

    Required keys: metric, unit, direction, base, new, change_pct, ci_pct, p_value,
    verdict, trials (an int for both sides, a (base, new) pair or {"base", "new"}).
    Optional: reason, new_label, design, warnings, modes, margin_pct, ns_per_unit, base_data /
    new_data (``SideData`` or dicts with
    trial_statistics, samples, series — each series a list of values or
    {"values", "steady_state_index"}). ``base``/``new`` may be spelled
    ``base_median``/``new_median``.
    """
    low, high = data["ci_pct"]
    return MetricComparison(
        metric=str(data["metric"]),
        unit=str(data["unit"]),
        direction=str(data["direction"]),
        base=float(data["base"] if "base" in data else data["base_median"]),
        new=float(data["new"] if "new" in data else data["new_median"]),
        change_pct=float(data["change_pct"]),
        ci_pct=(float(low), float(high)),
        p_value=float(data["p_value"]),
        verdict=str(data["verdict"]),
        trials=_trial_counts(data["trials"]),
        reason=str(data.get("reason") or ""),
        new_label=data.get("new_label"),
        base_data=_side(data.get("base_data")),
        new_data=_side(data.get("new_data")),
        design=str(data.get("design") or ""),
        warnings=tuple(str(w) for w in data.get("warnings") or ()),
        modes=dict(data.get("modes") or {}),
        margin_pct=None if data.get("margin_pct") is None else float(data["margin_pct"]),
        ns_per_unit=None if data.get("ns_per_unit") is None else float(data["ns_per_unit"]),
    )
