"""Print one run as text: headline, seed-style line, histogram, CDF, warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.text import Text

from kbench.report.counted_run import counted_run_lines, is_counted
from kbench.report.run_json import child_cpu_summary, cycle_ns, summary_line
from kbench.report.terminal import body_histogram_lines, cdf_lines, log2_histogram_lines, seed_line
from kbench.report.units import format_value
from kbench.sysinfo.usage import parse_usage, usage_lines

if TYPE_CHECKING:
    from kbench.engine.stored_run import StoredRun
    from kbench.profile.folded import FoldedProfile

MIN_SAMPLES_FOR_DISTRIBUTION = 20
"""Below this many values a histogram says nothing: the values are listed instead."""


def _section(console: Console, title: str, lines: list[str]) -> None:
    """A blank line, the title (if any) and the lines; nothing at all when there are no lines."""
    if not lines:
        return
    console.print()
    if title:
        console.print(title, highlight=False, markup=False)
    for line in lines:
        console.print(Text(line), highlight=False)


def render_quiet(console: Console, report: StoredRun, benchmark: str) -> None:
    """One line: benchmark, median, unit, n, the run's id, and its status unless complete."""
    summary = report.summary
    line = summary_line(benchmark, summary.p50 if summary else None, report.unit, summary.n if summary else 0)
    line += f" run {report.run_id}" + ("" if report.status == "complete" else f" {report.status}")
    console.print(Text(line), highlight=False)


def render_counters(console: Console, header: dict[str, object]) -> None:
    """The run's perf counters (``kbench.profile.counters``), when it counted."""
    from kbench.profile.counters import counter_lines, parse_counters

    counters = parse_counters(header)
    if counters is None:
        return
    usage = header.get("usage")
    wall = usage.get("wall_s") if isinstance(usage, dict) else header.get("elapsed_s")
    ops = f", {counters.operations:,.0f} {counters.operation}s" if counters.operations else ""
    raw = header.get("counters")
    slots = raw.get("slots") if isinstance(raw, dict) else None
    slots = len(slots) if isinstance(slots, list) else slots
    # a comparison side's counters are the sum of its slots, its header's wall time one slot's:
    # no "CPUs utilized" from two spans that differ
    wall_ns = float(wall) * 1e9 if isinstance(wall, int | float) and not slots else None
    where = f", summed over {slots} slots" if slots else ""
    _section(console, f"perf counters ({counters.source}, {counters.scope}{ops}{where})",
             [f"  {line}" for line in counter_lines(counters, wall_ns=wall_ns)])


def render_profile(console: Console, profile: FoldedProfile | None, problem: str | None, run_id: int) -> None:
    """The frames with the largest self share of the run's profile, or why it has none."""
    from kbench.profile.folded import is_kernel, plain_symbol

    if profile is None:
        if problem:
            console.print(Text.assemble(("warning:", "yellow"), f" no profile: {problem}"), highlight=False)
        return
    console.print(f"\nprofile ({profile.event} at {profile.frequency_hz} Hz, {profile.samples:,} samples, "
                  f"{profile.details.get('window', '')}; `kbench show {run_id} --flame FILE.svg` draws it)",
                  highlight=False)
    console.print(f"  {'self %':>7} {'children %':>10}  symbol", highlight=False)
    for frame, own, children in profile.top(12):
        where = " [k]" if is_kernel(frame) else ""
        console.print(Text(f"  {100 * own:7.2f} {100 * children:10.2f}  {plain_symbol(frame)}{where}"),
                      highlight=False)


def render_run(console: Console, report: StoredRun, hist: str = "linear", *, histogram: bool = True) -> None:
    """Headline, seed-style line, histogram and CDF (left out when not ``histogram``), metrics,
    run context, warnings."""
    if is_counted(report):  # instructions counted, not timed (docs/instructions.md)
        for line in counted_run_lines(report):
            console.print(Text(line), highlight=False)
        return
    metric, unit, summary, measurement = report.metric, report.unit, report.summary, report.measurement
    values, series, warnings = report.values, report.series, report.warnings
    header = measurement.header
    timer = header.get("timer") or {}
    how = [f"timer {timer['name']}"] if timer.get("name") else []
    if header.get("batch"):
        how.append(f"batch {header['batch']}")
    if header.get("tool_version"):
        how.append(str(header["tool_version"]))
    how.append(report.basis)
    console.print(Text.assemble((metric, "bold"), f"  run {report.run_id}  {report.status}  ({', '.join(how)})"),
                  highlight=False)
    if summary is None:
        console.print("no samples were collected")
    else:
        console.print(seed_line(summary, unit), highlight=False)
        low, high = summary.median_ci
        console.print(
            f"median {format_value(summary.p50, unit)} "
            f"[{100 * summary.median_ci_level:.0f}% CI {format_value(low, unit)}…{format_value(high, unit)}]  "
            f"mean {format_value(summary.mean, unit)} ± {format_value(summary.stdev, unit)}  "
            f"p99 {format_value(summary.p99, unit)}  outliers {summary.outliers}  "
            f"steady from sample {summary.steady_state_index}",
            highlight=False,
        )
        ns_per_cycle = cycle_ns(header) if unit == "cycles" else None
        if ns_per_cycle is not None:
            console.print(
                f"in ns (TSC {1e3 / ns_per_cycle:.3f} MHz): min {format_value(summary.min * ns_per_cycle, 'ns')} "
                f"median {format_value(summary.p50 * ns_per_cycle, 'ns')} "
                f"p99 {format_value(summary.p99 * ns_per_cycle, 'ns')} "
                f"mean {format_value(summary.mean * ns_per_cycle, 'ns')}",
                highlight=False,
            )
        if header.get("overhead") and unit == "cycles":
            sample = float(header["overhead"]["median_ticks"])
            batch = max(int(header.get("batch") or 1), 1)
            console.print(
                f"timer overhead (empty timed region): median {sample:.0f} cycles per sample "
                f"({sample / batch:.1f} per call at batch {batch})",
                highlight=False,
            )
        elif header.get("overhead"):
            overhead = measurement.overhead_ns()
            console.print(
                f"timer overhead: min {format_value(overhead['min'], 'ns')}, "
                f"median {format_value(overhead['median'], 'ns')} per sample "
                f"({format_value(overhead['median'] / max(int(header.get('batch') or 1), 1), 'ns')} per op)",
                highlight=False,
            )
        cpu = child_cpu_summary(report)
        if cpu is not None:
            low, high = cpu.median_ci
            console.print(
                f"CPU time (user + system of each execution): median {format_value(cpu.p50, 'ns')} "
                f"[{100 * cpu.median_ci_level:.0f}% CI {format_value(low, 'ns')}…{format_value(high, 'ns')}]  "
                f"mean {format_value(cpu.mean, 'ns')} ± {format_value(cpu.stdev, 'ns')}  "
                f"min {format_value(cpu.min, 'ns')}  max {format_value(cpu.max, 'ns')}",
                highlight=False,
            )
        if values.size < MIN_SAMPLES_FOR_DISTRIBUTION:
            listed = ", ".join(format_value(float(v), unit) for v in values)
            console.print(f"values in order: {listed}", highlight=False)
        elif histogram:
            lines = log2_histogram_lines(values, unit) if hist == "log2" else body_histogram_lines(values, unit)
            _section(console, f"histogram ({hist} bins)", lines)
            _section(console, "CDF", cdf_lines(values, unit))
    if series and len(series) > 1:
        _section(console, "all metrics", [
            f"  {item.name:<45} {item.direction:>6} is better"
            f"  median {format_value(float(np.median(item.values)), item.unit)}"
            f"  min {format_value(float(item.values.min()), item.unit)}"
            f"  max {format_value(float(item.values.max()), item.unit)}  n={item.values.size}"
            for item in series
        ])
    usage = parse_usage(header)
    if usage is not None:
        _section(console, "run context", [f"  {line}" for line in usage_lines(usage)])
    if header.get("counters"):
        render_counters(console, header)
    if header.get("crosscheck"):
        from kbench.engine.crosscheck_store import crosscheck_lines

        _section(console, "", crosscheck_lines(header["crosscheck"]))
    if header.get("tracking"):
        from kbench.trace.tracking_report import tracking_lines

        for title, lines in tracking_lines(header):
            _section(console, title, lines)
    if header.get("trace"):
        from kbench.report.trace_run import run_trace_lines

        _section(console, "trace log", run_trace_lines(measurement, "log2" if hist == "log2" else "both"))
    for warning in warnings:
        console.print(Text.assemble(("warning:", "yellow"), " ", warning), highlight=False)
