"""From the trials of a comparison to verdicts and a ComparisonReport.

Primary metric: with adaptive stopping, the sequential comparison's own final verdict
(the only one whose error rate holds after repeated looks); with a fixed design, the
Mann-Whitney verdict on all trials. Other metrics of the same runs (a suite's secondary
figures, will-it-scale's total and idle) form one family per side whose p-values are
adjusted (Holm by default, or Benjamini-Hochberg), which the report states.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kbench.compare.judge import compare_trials
from kbench.compare.multiple import Method, adjust
from kbench.compare.verdict import Verdict
from kbench.engine.compare_protocol import ComparisonOutcome, SideTrials
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
            found.append((new.side.label, verdict, new))
        family = [
            compare_trials(
                base.statistics(name), new.statistics(name), direction=direction, alpha=alpha,
                margin=margin, metric=name, unit=unit,
            )
            for name, unit, direction in secondary
        ]
        if len(family) > 1:
            family = list(adjust(family, correction))
        found.extend((new.side.label, verdict, new) for verdict in family)
    return found


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
        metrics.append(
            MetricComparison(
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
                base_data=side_data(base, verdict.metric),
                new_data=side_data(new, verdict.metric),
            )
        )
    return ComparisonReport(
        title=title,
        base_label=base.side.label,
        new_labels=tuple(side.side.label for side in outcome.sides[1:]),
        metrics=tuple(metrics),
        label_kind=label_kind,
        context=context,
        parameters={**parameters, "design": outcome.design, "rounds": outcome.rounds,
                    "block order": " ".join(outcome.order)},
        correction=f"{correction} (secondary metrics)" if any(len(s.metrics()) > 2 for s in outcome.sides) else None,
        confidence=1 - alpha,
    )
