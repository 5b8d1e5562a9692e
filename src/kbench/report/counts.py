"""A counted comparison as a ``ComparisonReport``, which every comparison renderer reads
(instruction counts, docs/instructions.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.compare.verdict import Verdict
from kbench.contract.counts import NOT_TIME
from kbench.engine.instructions import CountedComparison, CountedSide
from kbench.report.comparison.model import ComparisonReport, MetricComparison, SideData, metric_from_dict
from kbench.report.counted_run import count_text as _number
from kbench.report.counted_run import counter_text


def side_data(side: CountedSide) -> SideData:
    counts = side.counts()
    return SideData(trial_statistics=tuple(float(v) for v in counts.run_means),
                    samples=counts.values if counts.values.size else None)


def _comparison(verdict: Verdict, label: str, base: CountedSide | None, new: CountedSide | None) -> MetricComparison:
    data: dict[str, Any] = {**verdict.to_dict(), "new_label": label, "warnings": [*verdict.warnings, NOT_TIME]}
    if base is not None and new is not None:
        data["base_data"], data["new_data"] = side_data(base), side_data(new)
    return metric_from_dict(data)


def side_line(side: CountedSide) -> str:
    """``2124.25 instructions per operation (kernel 2124.25, user 0): all 1000 samples equal; runs 4``."""
    counts = side.counts()
    modes = [(mode, side.mode_counts(mode)) for mode in ("kernel", "user")]
    apart = ", ".join(f"{mode} {_number(found.count)}" for mode, found in modes if found is not None)
    return (f"{_number(counts.count)} per operation{f' ({apart})' if apart else ''}: {counts.how()}; "
            f"run{'s' if len(side.runs) != 1 else ''} {', '.join(map(str, side.run_ids))}")


def counts_report(
    outcome: CountedComparison, *, title: str, label_kind: str, context: Mapping[str, Any] | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> ComparisonReport:
    """The report of a counted comparison: per new side its verdict on the total count, then kernel
    and user apart where the counter told them apart; the counter, each side's counts and the
    notes (instructions are not time; valgrind's slowdown) among the parameters."""
    base = outcome.sides[0]
    metrics = []
    for new, verdict, modes in zip(outcome.sides[1:], outcome.verdicts, outcome.mode_verdicts, strict=True):
        metrics.append(_comparison(verdict, new.label, base, new))
        metrics.extend(_comparison(mode, new.label, None, None) for mode in modes)
    first = outcome.sides[0].header
    counting: dict[str, Any] = {"counted by": counter_text(outcome.source)}
    if first.get("interrupts"):
        counting["interrupts"] = first["interrupts"]
    counting.update({f"count of {side.label}": side_line(side) for side in outcome.sides})
    counting.update({f"note {index}": note for index, note in enumerate(outcome.notes()[1:], 1)})
    if outcome.seconds > 0:  # measured now (stored runs were counted before)
        counting["counting took"] = f"{outcome.seconds:.1f} s"
    return ComparisonReport(
        title=title, base_label=base.label, new_labels=tuple(s.label for s in outcome.sides[1:]),
        metrics=tuple(metrics), label_kind=label_kind, context=dict(context or {}),
        parameters={**dict(parameters or {}), **counting},
    )


def merged(first: ComparisonReport, second: ComparisonReport) -> ComparisonReport:
    """Two reports of the same sides (instructions and time) as one: ``first``'s metrics, then
    ``second``'s (BadRequest-free: the labels must match, ValueError otherwise)."""
    if first.base_label != second.base_label or first.new_labels != second.new_labels:
        raise ValueError(f"the reports compare different sides ({first.base_label}, {second.base_label})")
    return ComparisonReport(
        title=first.title, base_label=first.base_label, new_labels=first.new_labels,
        metrics=(*first.metrics, *second.metrics), label_kind=first.label_kind,
        context={**dict(second.context), **dict(first.context)},
        parameters={**dict(second.parameters), **dict(first.parameters)}, correction=second.correction,
        confidence=second.confidence, profile=second.profile, kernel_configs=second.kernel_configs,
    )
