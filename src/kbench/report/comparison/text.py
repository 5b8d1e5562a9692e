"""Plain-text comparison in the LKP/0-Day style: the ``%change`` table, headlines, machine, parameters.

Table layout (one row per metric, one ``%change  new ±%stddev`` block per new label)::

      6.1.0-56-amd64                 6.12.5
    ---------------- ---------------------------
             %stddev     %change         %stddev
                 \\          |                \\
         76.30 ±  1%      +3.1%      78.66 ±  1%  syscall.getppid.latency (ns)

Values are the sides' central values (``MetricComparison.base``/``new``); ``±N%`` is the
sample standard deviation of the per-trial statistics in percent of their mean, shown only
with at least two trials; ``%change`` is ``change_pct`` with one decimal. Every column is
right-aligned, so numbers line up on their last digit.
"""

from __future__ import annotations

from kbench.profile.delta import delta_lines
from kbench.report.comparison.common import (
    flat_items,
    format_change,
    format_number,
    headlines,
    method_note,
    overall_sentences,
)
from kbench.report.comparison.model import ComparisonReport, MetricComparison, SideData
from kbench.report.comparison.profiles import growth_note

STDDEV_WIDTH = 6  # " ±  4%"
MIN_VALUE_WIDTH = 10
CHANGE_WIDTH = 11  # "%change" right-aligned with room for "+1234.5%"


def stddev_field(side: SideData) -> str:
    """`` ±  4%`` (rounded to whole percent, LKP style) or blanks when fewer than two trials."""
    pct = side.stddev_pct
    if pct is None:
        return " " * STDDEV_WIDTH
    return f" ±{min(pct, 999):3.0f}%"


def fitted(label: str, width: int) -> str:
    """``label``, cut to ``width`` characters with a final ``…`` when longer: a column's header
    never runs into the next one (the ``base:``/``new:`` lines above the table name it in full)."""
    return label if len(label) <= width else label[: max(width - 1, 0)] + "…"


def metric_label(m: MetricComparison) -> str:
    return f"{m.metric} ({m.unit})" if m.unit else m.metric


def table_lines(report: ComparisonReport) -> list[str]:
    """The ``base ±%stddev  %change  new ±%stddev  metric`` table, header included."""
    labels = report.new_labels
    rows: list[tuple[MetricComparison, list[MetricComparison | None]]] = []
    for name in report.metric_names():
        per_label: list[MetricComparison | None] = []
        for label in labels:
            found = [m for m in report.for_label(label) if m.metric == name]
            per_label.append(found[0] if found else None)
        first = next(m for m in per_label if m is not None)
        rows.append((first, per_label))

    numbers = [format_number(m.base) for m in report.metrics] + [format_number(m.new) for m in report.metrics]
    value_width = max([MIN_VALUE_WIDTH, *(len(n) + 2 for n in numbers)])
    change_width = max([CHANGE_WIDTH, *(len(format_change(m.change_pct)) + 4 for m in report.metrics)])
    base_block = value_width + STDDEV_WIDTH
    new_block = change_width + value_width + STDDEV_WIDTH

    title = fitted(report.base_label, base_block - 1).ljust(base_block) + "".join(
        fitted(label, change_width + value_width - 1).rjust(change_width + value_width).ljust(new_block)
        for label in labels
    )
    rule = "-" * (base_block - 1) + " " + "".join("-" * (new_block - 1) + " " for _ in labels)
    names = "%stddev".rjust(base_block) + "".join(
        "%change".rjust(change_width) + "%stddev".rjust(value_width + STDDEV_WIDTH) for _ in labels
    )
    marks = [" "] * (base_block + new_block * len(labels))
    marks[value_width - 1] = "\\"  # under the last digit of each value, "|" under each change
    for i in range(len(labels)):
        start = base_block + i * new_block
        marks[start + change_width - 3] = "|"
        marks[start + change_width + value_width - 1] = "\\"
    lines = [title.rstrip(), rule.rstrip(), names.rstrip(), "".join(marks).rstrip()]
    for first, per_label in rows:
        line = format_number(first.base).rjust(value_width) + stddev_field(first.base_data)
        for m in per_label:
            if m is None:
                line += " " * new_block
            else:
                line += format_change(m.change_pct).rjust(change_width)
                line += format_number(m.new).rjust(value_width) + stddev_field(m.new_data)
        lines.append(f"{line}  {metric_label(first)}")
        if first.ns_per_unit:
            lines.append(_ns_row(first, per_label, value_width, change_width, new_block))
    return lines


def _ns_row(first: MetricComparison, per_label: list[MetricComparison | None], value_width: int, change_width: int,
            new_block: int) -> str:
    """The row of a metric counted in cycles again in nanoseconds (the target's TSC rate)."""
    line = format_number(first.in_ns(first.base) or 0.0).rjust(value_width) + " " * STDDEV_WIDTH
    for m in per_label:
        line += " " * new_block if m is None else (
            format_change(m.change_pct).rjust(change_width)
            + format_number(m.in_ns(m.new) or 0.0).rjust(value_width) + " " * STDDEV_WIDTH)
    return f"{line}  {first.metric} (ns, TSC {first.tsc_mhz:.3f} MHz)"


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
