"""Print one run as text: headline, seed-style line, histogram, CDF, warnings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.text import Text

from kbench.report.run_json import summary_line
from kbench.report.terminal import body_histogram_lines, cdf_lines, log2_histogram_lines, seed_line
from kbench.report.units import format_value
from kbench.sysinfo.usage import parse_usage, usage_lines

if TYPE_CHECKING:
    from kbench.engine.stored_run import StoredRun

MIN_SAMPLES_FOR_DISTRIBUTION = 20
"""Below this many values a histogram says nothing: the values are listed instead."""


def render_quiet(console: Console, report: StoredRun, benchmark: str) -> None:
    """One line: benchmark, median, unit, n, the run's id, and its status unless complete."""
    summary = report.summary
    line = summary_line(benchmark, summary.p50 if summary else None, report.unit, summary.n if summary else 0)
    line += f" run {report.run_id}" + ("" if report.status == "complete" else f" {report.status}")
    console.print(Text(line), highlight=False)


def render_run(console: Console, report: StoredRun, hist: str = "linear", *, histogram: bool = True) -> None:
    """Headline, seed-style line, histogram and CDF (left out when not ``histogram``), metrics,
    run context, warnings."""
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
        if values.size < MIN_SAMPLES_FOR_DISTRIBUTION:
            listed = ", ".join(format_value(float(v), unit) for v in values)
            console.print(f"values in order: {listed}", highlight=False)
        elif histogram:
            lines = log2_histogram_lines(values, unit) if hist == "log2" else body_histogram_lines(values, unit)
            console.print(f"\nhistogram ({hist} bins)")
            for line in lines:
                console.print(line, highlight=False)
            console.print("\nCDF")
            for line in cdf_lines(values, unit):
                console.print(line, highlight=False)
    if series and len(series) > 1:
        console.print("\nall metrics")
        for item in series:
            median = format_value(float(np.median(item.values)), item.unit)
            lowest = format_value(float(item.values.min()), item.unit)
            highest = format_value(float(item.values.max()), item.unit)
            console.print(
                f"  {item.name:<45} {item.direction:>6} is better  median {median}  min {lowest}  max {highest}"
                f"  n={item.values.size}",
                highlight=False,
            )
    usage = parse_usage(header)
    if usage is not None:
        console.print("\nrun context")
        for line in usage_lines(usage):
            console.print(Text(f"  {line}"), highlight=False)
    if header.get("crosscheck"):
        from kbench.engine.crosscheck_store import crosscheck_lines

        console.print()
        for line in crosscheck_lines(header["crosscheck"]):
            console.print(Text(line), highlight=False)
    if header.get("tracking"):
        from kbench.trace.tracking_report import tracking_lines

        for title, lines in tracking_lines(header):
            console.print(f"\n{title}")
            for line in lines:
                console.print(Text(line), highlight=False)
    if header.get("trace"):
        from kbench.report.trace_run import run_trace_lines

        console.print("\ntrace log")
        for line in run_trace_lines(measurement, "log2" if hist == "log2" else "both"):
            console.print(Text(line), highlight=False)
    for warning in warnings:
        console.print(Text.assemble(("warning:", "yellow"), " ", warning), highlight=False)
