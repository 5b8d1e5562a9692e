"""The trace part of a run's reports (``kbench run``/``show`` text and ``--json``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kbench.engine.measurement import Measurement
from kbench.trace.analysis import log_facts, series_json
from kbench.trace.log import trace_log_of
from kbench.trace.overhead import TracepointOverhead, tracepoint_overhead
from kbench.trace.render import OVERHEAD_WORKLOAD, trace_report_lines
from kbench.trace.series import log_series


def run_trace_json(measurement: Measurement) -> dict[str, Any]:
    """``trace`` (one object per function, key and sum), ``trace_log`` and the overheads; {} without a log."""
    log = trace_log_of(measurement.header, measurement.columns)
    if log is None:
        return {}
    context = measurement.header["trace"]
    data: dict[str, Any] = {
        "trace": [series_json(series, log.tsc_khz) for series in log_series(log, context)],
        "trace_log": log_facts(log),
    }
    if measurement.header.get("workload") == OVERHEAD_WORKLOAD:
        data["tracepoint_overhead"] = tracepoint_overhead(log).to_json()
    elif context.get("tracepoint_overhead"):
        data["tracepoint_overhead"] = TracepointOverhead.from_json(context["tracepoint_overhead"]).to_json()
    if context.get("probe_overhead"):
        data["probe_overhead"] = context["probe_overhead"]
    return data


def run_trace_lines(measurement: Measurement, hist: str = "both", machine: str = "") -> list[str]:
    """The text report of the run's log, or nothing without one."""
    log = trace_log_of(measurement.header, measurement.columns)
    if log is None:
        return []
    workload = str(measurement.header.get("workload") or "")
    return trace_report_lines(log, measurement.header["trace"], hist, machine, workload)


def with_key_sums(measurement: Measurement, sums: Sequence[Sequence[int]]) -> Measurement:
    """The measurement with its log's reports asking for these key sums too (ValueError without a log)."""
    context = measurement.header.get("trace")
    if not isinstance(context, dict):
        raise ValueError("this run has no trace log: --sum-keys sums tracepoint keys a run logged")
    wanted = [*context.get("sums", []), *([list(keys) for keys in sums])]
    header = {**measurement.header, "trace": {**context, "sums": wanted}}
    return dataclasses.replace(measurement, header=header)
