"""From the measurements of a comparison to verdicts and a ComparisonReport.

Trial-level design (``build_report``). Primary metric: with adaptive stopping, the
sequential comparison's own final verdict (the only one whose error rate holds after
repeated looks); with a fixed design, the Mann-Whitney verdict on all trials. Other
metrics of the same runs (a suite's secondary figures, will-it-scale's total and idle)
form one family per side whose p-values are adjusted (Holm by default, or
Benjamini-Hochberg), which the report states. Every trial-level verdict goes through
``kbench.compare.modes.guard_trials``: trials that fall into separate modes make it
"inconclusive" (multimodal).

Interleaved design (``build_interleaved_report``). Primary metric: the paired
sequential comparison's final verdict. Secondary metrics (a command's wall time beside
its CPU time) are judged on the same blocks at the nominal level of the look the
comparison stopped at: the alpha-spending boundary bounds the chance that *any*
statistic looked at on those looks crosses it, so a secondary verdict keeps its
error rate although the stopping time was chosen by the primary. Their "no change" uses
the equivalence boundary's level at that look (two one-sided tests), as the primary's does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from kbench.compare.judge import compare_trials
from kbench.compare.modes import guard_trials, side_modes
from kbench.compare.multiple import Method, adjust
from kbench.compare.paired import judge_blocks
from kbench.compare.run_spread import runs_disagree
from kbench.compare.verdict import Verdict
from kbench.engine.compare_protocol import ComparisonOutcome, SideTrials
from kbench.engine.failures import failures_text
from kbench.engine.interleaved_outcome import INTERLEAVED_DESIGN, InterleavedOutcome
from kbench.profile.counters import is_counter_metric, judgeable, unjudged_note
from kbench.profile.monitors import is_monitor_metric
from kbench.report.comparison import ComparisonReport, MetricComparison, SideData, TrialSeries
from kbench.stats.warmup import steady_state_index

MAX_PLOTTED_SAMPLES = 200_000
"""Pooled samples kept per side for the histogram/CDF plots (evenly thinned beyond this)."""


def side_data(trials: SideTrials, metric: str) -> SideData:
    arrays = trials.values(metric)
    pooled = np.concatenate(arrays) if arrays else None
    if pooled is not None and pooled.size > MAX_PLOTTED_SAMPLES:
        pooled = pooled[:: pooled.size // MAX_PLOTTED_SAMPLES + 1]
    return SideData(
        trial_statistics=tuple(trials.statistics(metric)),
        samples=pooled,
        series=tuple(TrialSeries(a, steady_state_index(a) if a.size >= 50 else 0) for a in arrays),
    )


def verdicts_for(
    outcome: ComparisonOutcome, *, alpha: float, margin: float | None, correction: Method
) -> list[tuple[str, Verdict, SideTrials]]:
    """(new side label, verdict, new side trials) for every new side and metric, primary first."""
    base = outcome.sides[0]
    found: list[tuple[str, Verdict, SideTrials]] = []
    for new in outcome.sides[1:]:
        metrics = base.metrics()
        primary, secondary = metrics[:1], metrics[1:]
        for name, unit, direction in primary:
            sequential = outcome.sequential.get(new.side.label) if outcome.sequential else None
            if sequential is not None and sequential.last is not None and sequential.last.verdict is not None:
                verdict = sequential.last.verdict
            else:
                verdict = compare_trials(
                    base.statistics(name), new.statistics(name), direction=direction, alpha=alpha,
                    margin=margin, metric=name, unit=unit,
                )
            found.append((new.side.label, guard_trials(verdict, base.statistics(name), new.statistics(name)), new))
        judged = [
            compare_trials(
                base.statistics(name), new.statistics(name), direction=direction, alpha=alpha,
                margin=margin, metric=name, unit=unit,
            )
            for name, unit, direction in secondary
            if not is_counter_metric(name) or judgeable(base.statistics(name), new.statistics(name))
        ]
        family: list[Verdict] = []
        # LKP's monitors (vmstat.*, proc-vmstat.* ...) are a family of their own: their many rows do not
        # weaken the correction of the benchmark's own secondary metrics
        for group in ([v for v in judged if not is_monitor_metric(v.metric)],
                      [v for v in judged if is_monitor_metric(v.metric)]):
            family += list(adjust(group, correction)) if len(group) > 1 else group
        for verdict in family:
            guarded = guard_trials(verdict, base.statistics(verdict.metric), new.statistics(verdict.metric))
            found.append((new.side.label, guarded, new))
    return found


def modes_of(base: list[float], new: list[float], unit: str) -> dict[str, object]:
    """The report's ``modes``: per side with two or more clusters, the clusters and their description."""
    return {name: {**modes.to_dict(), "text": modes.describe(unit)} for name, modes in side_modes(base, new).items()}


def metric_comparison(verdict: Verdict, label: str, base: SideData, new: SideData) -> MetricComparison:
    return MetricComparison(
        metric=verdict.metric,
        unit=verdict.unit,
        direction=verdict.direction,
        base=verdict.base_median,
        new=verdict.new_median,
        change_pct=verdict.change_pct,
        ci_pct=verdict.ci_pct,
        p_value=verdict.p_value,
        verdict=verdict.verdict,
        trials=verdict.trials,
        reason=verdict.reason,
        new_label=label,
        base_data=base,
        new_data=new,
        design=verdict.design,
        warnings=verdict.warnings,
        modes=modes_of(list(base.trial_statistics), list(new.trial_statistics), verdict.unit),
        margin_pct=verdict.margin_pct,
    )


def build_report(
    outcome: ComparisonOutcome,
    *,
    title: str,
    label_kind: str,
    alpha: float,
    margin: float | None,
    correction: Method,
    context: dict[str, Any],
    parameters: dict[str, Any],
) -> ComparisonReport:
    base = outcome.sides[0]
    metrics = []
    for label, verdict, new in verdicts_for(outcome, alpha=alpha, margin=margin, correction=correction):
        trial_design = f"trials: {outcome.design}; Mann-Whitney U on trial medians"
        verdict = verdict if verdict.design not in ("", "fixed") else replace(verdict, design=trial_design)
        metrics.append(metric_comparison(verdict, label, side_data(base, verdict.metric),
                                         side_data(new, verdict.metric)))
    return ComparisonReport(
        title=title,
        base_label=base.side.label,
        new_labels=tuple(side.side.label for side in outcome.sides[1:]),
        metrics=tuple(metrics),
        label_kind=label_kind,
        context=context,
        parameters={**parameters, "design": outcome.design, "rounds": outcome.rounds,
                    "block order": " ".join(outcome.order),
                    **_unjudged([name for name, _, _ in base.metrics()], {m.metric for m in metrics})},
        correction=f"{correction} (secondary metrics)" if any(len(s.metrics()) > 2 for s in outcome.sides) else None,
        confidence=1 - alpha,
    )


def interleaved_verdicts(
    outcome: InterleavedOutcome, *, alpha: float, margin: float | None, correction: Method
) -> list[tuple[int, Verdict]]:
    """(new side index, verdict) for every new side and metric, the primary first (module docstring)."""
    found: list[tuple[int, Verdict]] = []
    primary, secondary = outcome.metrics[0], outcome.metrics[1:]
    for new in range(1, len(outcome.sides)):
        sequential = outcome.sequential[outcome.sides[new].label]
        side_margin = sequential.judged_margin if sequential.judged_margin is not None else margin
        last = sequential.last
        nominal = last.nominal_alpha if last is not None and last.nominal_alpha > 0 else alpha
        if last is not None and last.verdict is not None:
            found.append((new, last.verdict))
        else:
            found.append((new, _judge(outcome, new, primary.name, primary.unit, primary.direction, alpha,
                                      side_margin, outcome.design)))
        equivalence = sequential.equivalence
        equivalence_alpha = (equivalence.looks[-1].nominal_alpha
                             if equivalence is not None and equivalence.looks else None)
        family = [_judge(outcome, new, m.name, m.unit, m.direction, nominal, side_margin,
                         f"judged on the same blocks at the stopping look's level {nominal:.4g}",
                         equivalence_alpha)
                  for m in secondary
                  if not is_counter_metric(m.name)
                  or judgeable(outcome.side_values(0, m.name), outcome.side_values(new, m.name))]
        if len(family) > 1:
            family = list(adjust(family, correction))
        found.extend((new, verdict) for verdict in family)
    return found


def _judge(outcome: InterleavedOutcome, new: int, metric: str, unit: str, direction: str, alpha: float,
           margin: float | None, design: str, equivalence_alpha: float | None = None) -> Verdict:
    return judge_blocks(outcome.log_ratios(new, metric), base_values=outcome.side_values(0, metric),
                        new_values=outcome.side_values(new, metric), direction=direction, alpha=alpha,
                        margin=margin, metric=metric, unit=unit, design=design,
                        equivalence_alpha=equivalence_alpha)


def _unjudged(names: list[str], judged: set[str]) -> dict[str, str]:
    """The report's note of counters measured but not judged (a count that was 0 somewhere)."""
    left = [name for name in names if is_counter_metric(name) and name not in judged]
    return {"counters not judged": unjudged_note(left)} if left else {}


def slot_side(values: list[float]) -> SideData:
    array = np.asarray(values, dtype=np.float64)
    return SideData(trial_statistics=tuple(values), samples=array if array.size else None,
                    series=(TrialSeries(array, 0),) if array.size else ())


def blocks_parameters(outcome: InterleavedOutcome, design: str, **more: str) -> dict[str, Any]:
    """An interleaved report's parameters: the design, its blocks and time, ``more``, the runs."""
    return {"design": design, "blocks": outcome.blocks, "budget": f"{outcome.budget_s:g} s",
            "measured": f"{outcome.elapsed_s:.1f} s", "slot": outcome.slot_text, **more,
            "runs": " ".join(f"{s.label}={s.run_id}" for s in outcome.sides), "comparison": outcome.comparison_id}


def build_interleaved_report(
    outcome: InterleavedOutcome,
    *,
    title: str,
    label_kind: str,
    alpha: float,
    margin: float | None,
    correction: Method,
    context: dict[str, Any],
    parameters: dict[str, Any],
) -> ComparisonReport:
    metrics = []
    for new, verdict in interleaved_verdicts(outcome, alpha=alpha, margin=margin, correction=correction):
        if not verdict.design.startswith(INTERLEAVED_DESIGN):
            verdict = replace(verdict, design=f"{INTERLEAVED_DESIGN}; {verdict.design}" if verdict.design
                              else outcome.design)
        if outcome.run_blocks and verdict.metric == outcome.metrics[0].name:
            warning = runs_disagree(outcome.log_ratios(new, verdict.metric), outcome.run_blocks)
            if warning is not None:
                verdict = replace(verdict, warnings=(*verdict.warnings, warning))
        metrics.append(replace(metric_comparison(verdict, outcome.sides[new].label,
                                                 slot_side(outcome.side_values(0, verdict.metric)),
                                                 slot_side(outcome.side_values(new, verdict.metric))),
                               ns_per_unit=outcome.ns_per_unit.get(verdict.metric)))
    extra = blocks_parameters(outcome, outcome.design)
    measured = {label: text for label, c in outcome.sequential.items() if (text := c.describe_margin()) is not None}
    if len(measured) == 1:
        extra["margin"] = next(iter(measured.values()))
    elif measured:
        extra["margin"] = "; ".join(f"{label}: {text}" for label, text in measured.items())
    if outcome.metric_reason:
        extra["metric"] = f"{outcome.metrics[0].name} ({outcome.metric_reason})"
    extra.update(_unjudged([m.name for m in outcome.metrics], {m.metric for m in metrics}))
    return ComparisonReport(
        title=title,
        base_label=outcome.sides[0].label,
        new_labels=tuple(side.label for side in outcome.sides[1:]),
        metrics=tuple(metrics),
        label_kind=label_kind,
        context=context,
        parameters={**parameters, **extra},
        correction=f"{correction} (secondary metrics)" if len(outcome.metrics) > 2 else None,
        confidence=1 - alpha,
    )


def with_failed_executions(report: ComparisonReport, counts: dict[str, int]) -> ComparisonReport:
    """``report`` saying, beside its primary verdict, how many failed executions each side timed
    (``--ignore-failure``); unchanged when none did."""
    text = failures_text(counts)
    if text is None or not report.metrics:
        return report
    primary, *rest = report.metrics
    return replace(report, metrics=(replace(primary, warnings=(*primary.warnings, text)), *rest),
                   parameters={**report.parameters,
                               "failed executions": ", ".join(f"{label}: {n}" for label, n in counts.items())})
