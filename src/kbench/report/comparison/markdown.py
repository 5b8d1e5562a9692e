"""GitHub-flavoured Markdown comparison: headline list, one table row per metric, context tables."""

from __future__ import annotations

from kbench.report.comparison.common import (
    flat_items,
    format_change,
    format_ci,
    format_number,
    format_p,
    headlines,
    method_note,
    overall_sentences,
)
from kbench.report.comparison.model import ComparisonReport, MetricComparison, SideData
from kbench.report.comparison.profiles import growth_note
from kbench.report.units import format_ns

COLUMNS = ("metric", "unit", "base", "±%", "new", "±%", "change", "CI", "p", "verdict", "trials")
ALIGN = (":--", ":--", "--:", "--:", "--:", "--:", "--:", ":-:", "--:", ":--", "--:")


def escape(text: str) -> str:
    """Make ``text`` safe inside a table cell (pipes, newlines, markup characters)."""
    for char in "\\|*_`[]<>":
        text = text.replace(char, "\\" + char)
    return text.replace("\n", " ")


def _stddev(side: SideData) -> str:
    pct = side.stddev_pct
    return "" if pct is None else f"{pct:.1f}%"


def _row(report: ComparisonReport, m: MetricComparison, multi: bool) -> str:
    name = escape(m.metric) + (f" ({escape(report.new_label_of(m))})" if multi else "")
    verdict = f"**{m.verdict}**" if m.significant else m.verdict
    cells = (
        name, escape(m.unit), _value(m, m.base), _stddev(m.base_data), _value(m, m.new),
        _stddev(m.new_data), format_change(m.change_pct), format_ci(m.ci_pct), escape(format_p(m.p_value)),
        verdict, f"{m.trials[0]}/{m.trials[1]}",
    )
    return "| " + " | ".join(cells) + " |"


def _value(m: MetricComparison, value: float) -> str:
    """The value, and in ns as well for a metric counted in cycles."""
    ns = m.in_ns(value)
    return format_number(value) + ("" if ns is None else f" ({escape(format_ns(ns))})")


def _table(title: str, mapping: object) -> list[str]:
    items = flat_items(mapping)
    if not items:
        return []
    rows = [f"| {escape(k)} | {escape(v)} |" for k, v in items]
    return ["", f"## {title}", "", "| | |", "|:--|:--|", *rows]


def _profile(report: ComparisonReport, growth: int = 10, shrink: int = 5) -> list[str]:
    profile = report.profile
    if profile is None:
        return []
    lines = ["", "## Why: profile delta", "", f"_{escape(profile.note)}_"]
    for delta in profile.deltas:
        lines.extend(["", f"**{escape(delta.new_label)}** against **{escape(delta.base_label)}**: "
                      f"{escape(growth_note(delta))} ({escape(delta.event)}, {delta.base_samples} vs "
                      f"{delta.new_samples} samples)", "",
                      "| symbol | | base % | new % | change (points) | noise ± |", "|:--|:--|--:|--:|--:|--:|"])
        for row in [*delta.growth(growth), *delta.shrink(shrink)]:
            where = " [k]" if row.where == "kernel" else ""
            lines.append(f"| {escape(row.symbol)}{where} | {row.kind} | {row.base_pct:.2f} | {row.new_pct:.2f} | "
                         f"{row.change_pct:+.2f} | {row.noise_pp:.2f} |")
    return lines


def render(report: ComparisonReport) -> str:
    kind = f"{report.label_kind} " if report.label_kind else ""
    news = ", ".join(f"`{label}`" for label in report.new_labels)
    lines = [f"# {escape(report.title)}", "", f"Base: {kind}`{report.base_label}` · new: {news}", ""]
    found = headlines(report)
    if found:
        lines.extend(f"- {escape(h)}" for h in found)
    else:
        lines.append("Nothing was compared.")
    lines.append("")
    lines.extend(f"**{escape(sentence)}**  " for sentence in overall_sentences(report))
    lines.extend(["", "| " + " | ".join(COLUMNS) + " |", "|" + "|".join(ALIGN) + "|"])
    multi = len(report.new_labels) > 1
    lines.extend(_row(report, m, multi) for m in report.metrics)
    lines.extend(["", f"_{escape(method_note(report))}; ±% = stdev of per-trial values in % of their mean._"])
    lines.extend(_profile(report))
    lines.extend(_table("Machine", report.context))
    lines.extend(_table("Test parameters", report.parameters))
    return "\n".join(lines) + "\n"
