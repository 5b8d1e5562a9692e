"""Plain-text comparison in the LKP/0-Day style: the ``%change`` table, headlines, machine, parameters.

The table is ``kbench.report.lkp_table``'s (values in their units: times scaled to
ns/µs/ms/s, counts with SI prefixes).
"""

from __future__ import annotations

from kbench.profile.delta import delta_lines
from kbench.report.comparison.common import (
    flat_items,
    headlines,
    method_note,
    overall_sentences,
)
from kbench.report.comparison.model import ComparisonReport, MetricComparison
from kbench.report.comparison.profiles import growth_note
from kbench.report.lkp_table import Cell, Row, change_text, lkp_table
from kbench.report.units import format_measure, metric_name


def table_lines(report: ComparisonReport) -> list[str]:
    """The ``base ±%stddev  %change  new ±%stddev  metric`` table (``kbench.report.lkp_table``), header
    included; a metric counted in cycles gets a second row in nanoseconds at the target's TSC rate."""
    rows: list[Row] = []
    for name in report.metric_names():
        per_label: list[MetricComparison | None] = []
        for label in report.new_labels:
            found = [m for m in report.for_label(label) if m.metric == name]
            per_label.append(found[0] if found else None)
        first = next(m for m in per_label if m is not None)
        rows.append(Row(metric_name(first.metric, first.unit),
                        Cell(format_measure(first.base, first.unit), first.base_data.stddev_pct),
                        [None if m is None else (change_text(m.change_pct),
                                                 Cell(format_measure(m.new, m.unit), m.new_data.stddev_pct))
                         for m in per_label]))
        if first.ns_per_unit:
            rows.append(Row(f"{first.metric} (ns, TSC {first.tsc_mhz:.3f} MHz)",
                            Cell(format_measure(first.in_ns(first.base) or 0.0, "ns")),
                            [None if m is None else (change_text(m.change_pct),
                                                     Cell(format_measure(m.in_ns(m.new) or 0.0, "ns")))
                             for m in per_label]))
    return lkp_table(report.base_label, report.new_labels, rows)


def _section(title: str, mapping: object) -> list[str]:
    items = flat_items(mapping)
    if not items:
        return []
    width = max(len(k) for k, _ in items)
    return ["", f"{title}:", *(f"  {k.ljust(width)}  {v}" for k, v in items)]


def profile_lines(report: ComparisonReport) -> list[str]:
    """The profile delta of every new side (0-Day's perf-profile rows), when the sides were profiled."""
    profile = report.profile
    if profile is None:
        return []
    lines = ["", f"why: profiles ({profile.note})"]
    for delta in profile.deltas:
        lines.extend(["", f"{delta.new_label} against {delta.base_label}: {growth_note(delta)}"])
        lines.extend(f"  {line}" for line in delta_lines(delta))
    return lines


def kernel_config_lines(report: ComparisonReport) -> list[str]:
    """Each new side's kernel config against the base's, as scripts/diffconfig prints it."""
    lines = []
    for diff in report.kernel_configs:
        if diff.base_digest is None or diff.new_digest is None:
            unknown = diff.base_label if diff.base_digest is None else diff.new_label
            lines.extend(["", f"kernel config: {diff.new_label} against {diff.base_label}: {unknown}'s is unknown"])
            continue
        count = len(diff.lines)
        lines.extend(["", f"kernel config: {diff.new_label} ({diff.new_digest[:12]}) against {diff.base_label} "
                          f"({diff.base_digest[:12]}): {count} option{'s differ' if count != 1 else ' differs'}"])
        lines.extend(f"  {line}" for line in diff.lines)
    return lines


def render(report: ComparisonReport) -> str:
    """The whole text report: title, table, headlines, overall summary, machine, parameters."""
    kind = f"{report.label_kind} " if report.label_kind else ""
    lines = [report.title, "=" * len(report.title), ""]
    lines.append(f"base: {kind}{report.base_label}")
    lines.extend(f"new:  {kind}{label}" for label in report.new_labels)
    lines.append("")
    lines.extend(table_lines(report))
    lines.append("")
    found = headlines(report)
    lines.extend(found or ["nothing was compared"])
    lines.append("")
    lines.extend(overall_sentences(report))
    lines.append(method_note(report))
    lines.extend(profile_lines(report))
    lines.extend(kernel_config_lines(report))
    reasons = [f"  {m.metric}: {m.verdict}, {m.reason}" for m in report.metrics if m.reason]
    if reasons:
        lines.extend(["", "verdict reasons:", *reasons])
    warnings = list(dict.fromkeys(f"  {m.metric}: {w}" for m in report.metrics for w in m.warnings))
    if warnings:
        lines.extend(["", "warnings:", *warnings])
    designs = list(dict.fromkeys(m.design for m in report.metrics if m.design))
    if designs:
        lines.extend(["", "design:", *(f"  {d}" for d in designs)])
    lines.extend(_section("machine", report.context))
    lines.extend(_section("test parameters", report.parameters))
    return "\n".join(lines) + "\n"
