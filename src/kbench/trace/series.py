"""A trace run's metric series: one per traced function and tracepoint key, and each sum."""

from __future__ import annotations

from typing import Any

from kbench.catalog.benchmarks import LOWER_IS_BETTER
from kbench.engine.measurement import Measurement
from kbench.engine.series import MetricSeries
from kbench.trace.analysis import UNIT, KeySeries, combine_keys, key_series
from kbench.trace.log import TraceLog, trace_log_of
from kbench.trace.selection import measured_entries


def log_series(log: TraceLog, context: dict[str, Any]) -> list[KeySeries]:
    """Every function and key with entries, then the sums the run asked for (even if empty)."""
    selection = measured_entries(log)
    sums = [combine_keys(log, tuple(keys), selection) for keys in context.get("sums", [])]
    return key_series(log, selection) + sums


def trace_series(measurement: Measurement, metric: str) -> list[MetricSeries]:
    """The series with values, ``metric`` first; none when nothing was logged."""
    log = trace_log_of(measurement.header, measurement.columns)
    if log is None:
        return []
    found = [
        MetricSeries(series.metric, UNIT, LOWER_IS_BETTER, series.values)
        for series in log_series(log, measurement.header.get("trace", {}))
        if series.values.size
    ]
    found.sort(key=lambda series: series.name != metric)
    return found
