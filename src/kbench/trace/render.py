"""Text reports of a log: per-key lines, funclatency-style log2 and linear histograms, and
the seed's overhead tables."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from kbench.report.terminal import body_histogram_lines
from kbench.stats.histogram import log2_histogram
from kbench.stats.summary import summarize
from kbench.trace.analysis import UNIT, KeySeries, log_facts
from kbench.trace.log import TraceLog
from kbench.trace.overhead import OverheadTable, ProbeOverhead, TracepointOverhead, tracepoint_overhead
from kbench.trace.series import log_series

STARS = 40
MIN_FOR_LINEAR = 20
"""Below this many values a linear histogram says nothing."""
OVERHEAD_WORKLOAD = "trace_overhead"


def funclatency_lines(values: np.ndarray, unit: str = UNIT) -> list[str]:
    """bcc funclatency's histogram: ``low -> high : count |****|``, power-of-two buckets.

    Buckets run from the smallest to the largest non-empty one; ``high`` is inclusive
    (2**(e+1) - 1 for whole cycles), and a value of 0 has a ``0 -> 0`` bucket of its own.
    """
    if values.size == 0:
        return []
    histogram = log2_histogram(values)
    rows: list[tuple[int, int, int]] = []
    if histogram.zeros:
        rows.append((0, 0, histogram.zeros))
    for exponent, count in zip(histogram.exponents, histogram.counts, strict=True):
        rows.append((2 ** int(exponent), 2 ** (int(exponent) + 1) - 1, int(count)))
    width = max(len(str(high)) for _, high, _ in rows)
    peak = max(count for _, _, count in rows)
    lines = [f"{unit:>{2 * width + 4}} : count     distribution"]
    for low, high, count in rows:
        stars = "*" * (count * STARS // peak)
        lines.append(f"{low:>{width}} -> {high:<{width}} : {count:<9}|{stars:<{STARS}}|")
    return lines


def _cycles(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.0f}"


def series_line(series: KeySeries, tsc_khz: int) -> str:
    if series.values.size == 0:
        return f"{series.label}: nothing logged"
    s = summarize(series.values, detect_warmup=False)
    ns = f"  (median {s.p50 * 1e6 / tsc_khz:.0f} ns)" if tsc_khz else ""
    switched = f"  {series.switched} include time off the CPU" if series.switched else ""
    return (
        f"{series.label}: count {s.n}  min {_cycles(s.min)}  median {_cycles(s.p50)}  p90 {_cycles(s.p90)}  "
        f"p99 {_cycles(s.p99)}  max {_cycles(s.max)}  mad {_cycles(s.mad)}  cycles{ns}{switched}"
    )


def table_lines(title: str, row: OverheadTable, machine: str = "") -> list[str]:
    """One of the seed's tables: Machine | # Samples | Min | Max | Mean | Std Dev | Std Dev %."""
    head = ("Machine", "# Samples", "Min", "Max", "Mean", "Std Dev", "Std Dev %")
    cells = (machine or "this kernel", str(row.samples), _cycles(row.min), _cycles(row.max), f"{row.mean:.2f}",
             f"{row.stdev:.2f}", f"{row.stdev_pct:.0f}%" if not math.isnan(row.stdev_pct) else "-")
    widths = [max(len(a), len(b)) for a, b in zip(head, cells, strict=True)]
    return [
        title,
        " | ".join(f"{h:<{w}}" for h, w in zip(head, widths, strict=True)),
        "-|-".join("-" * w for w in widths),
        " | ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True)),
    ]


def tracepoint_overhead_lines(overhead: TracepointOverhead, machine: str = "") -> list[str]:
    pairs = f"keys {overhead.outer_key} (outer) and {overhead.inner_key} (inner)"
    return [
        *table_lines(f"Total overhead, cycles added to execution per START/STOP pair (outer - inner, {pairs})",
                     overhead.total, machine),
        "",
        *table_lines("Effective overhead, cycles added to a measurement (the empty inner pair)",
                     overhead.effective, machine),
    ]


def probe_overhead_lines(overhead: ProbeOverhead, machine: str = "") -> list[str]:
    return [
        *table_lines("Probe effective overhead, cycles a kretprobe adds to each duration it logs "
                     "(an empty function, probed)", overhead.effective, machine),
        f"Probe total overhead: {overhead.total:.0f} cycles added to each call of a probed function "
        f"(empty function: {overhead.call_with_probe:.0f} cycles per call probed, "
        f"{overhead.call_without_probe:.0f} not probed)",
    ]


def facts_line(log: TraceLog) -> str:
    facts = log_facts(log)
    parts = [f"log: {facts['entries']} entries"]
    if facts["outside_run"]:
        parts.append(f"{facts['measured']} inside the recorded loop, {facts['outside_run']} outside "
                     "(warm-up, calibration) left out")
    parts.append(f"overflow {facts['overflow']}")
    if facts["invalid_keys"]:
        parts.append(f"invalid keys {facts['invalid_keys']}")
    if facts["foreign_stops"]:
        parts.append(f"foreign stops {facts['foreign_stops']}")
    parts.append(f"layout {facts['layout']}, {facts['size']} entries")
    return ", ".join(parts)


def trace_report_lines(
    log: TraceLog, context: dict[str, Any], hist: str = "both", machine: str = "", workload: str = ""
) -> list[str]:
    """The whole report of one log: facts, each series with its histograms, the overheads."""
    lines = [facts_line(log)]
    for series in log_series(log, context):
        lines += ["", series_line(series, log.tsc_khz)]
        if hist in ("log2", "both"):
            lines += funclatency_lines(series.values)
        if hist in ("linear", "both") and series.values.size >= MIN_FOR_LINEAR:
            lines += ["", "linear histogram", *body_histogram_lines(series.values, UNIT)]
    if context.get("probe_overhead"):
        lines += ["", *probe_overhead_lines(ProbeOverhead.from_json(context["probe_overhead"]), machine)]
    overhead = None
    if workload == OVERHEAD_WORKLOAD:
        overhead = tracepoint_overhead(log)
    elif context.get("tracepoint_overhead"):
        overhead = TracepointOverhead.from_json(context["tracepoint_overhead"])
    if overhead is not None:
        lines += ["", *tracepoint_overhead_lines(overhead, machine)]
    return lines
