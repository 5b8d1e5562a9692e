"""The metric series of a measurement: one per metric, each with its unit and direction.

A probe or kbench.ko run has one series (per-operation time of every sample); a suite
run has one series per metric the tool reports (one value per iteration).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kbench.engine.measurement import Measurement
from kbench.trace.log import TRACE_FORMAT

SUITE_FORMAT = "kbench-suite/1"
CROSSCHECK_FORMAT = "kbench-crosscheck/1"
"""A method's values of ``kbench crosscheck`` (kbench.trace.crosscheck_store)."""


@dataclass(frozen=True)
class MetricSeries:
    name: str
    unit: str
    direction: str
    values: np.ndarray


def metric_series(
    measurement: Measurement, metric: str, unit: str, direction: str, *, subtract_overhead: bool = False
) -> list[MetricSeries]:
    """Every metric of ``measurement``, the primary one (``metric``) first; then those of
    ``--track`` (kernel entries, utilisation) when the run was tracked."""
    found = _own_series(measurement, metric, unit, direction, subtract_overhead=subtract_overhead)
    if "tracking" in measurement.header:
        from kbench.trace.tracking_report import tracking_series

        found += tracking_series(measurement, metric)
    return found


def _own_series(
    measurement: Measurement, metric: str, unit: str, direction: str, *, subtract_overhead: bool = False
) -> list[MetricSeries]:
    header = measurement.header
    if header.get("format") == SUITE_FORMAT:
        found = [
            MetricSeries(m["name"], m["unit"], m["direction"], measurement.columns[m["name"]].astype(np.float64))
            for m in header["metrics"]
            if m["name"] in measurement.columns
        ]
        found.sort(key=lambda series: series.name != metric)
        return found
    if header.get("kind") == "scale":
        return _scale_series(measurement)
    if header.get("format") == TRACE_FORMAT:
        from kbench.trace.series import trace_series

        return trace_series(measurement, metric)
    if header.get("format") == CROSSCHECK_FORMAT:
        from kbench.trace.crosscheck_store import crosscheck_series

        return crosscheck_series(measurement, metric, unit, direction)
    if measurement.n == 0:
        return []
    values = measurement.per_op(unit, subtract_overhead=subtract_overhead)
    return [MetricSeries(metric, unit, direction, values)]


def _scale_series(measurement: Measurement) -> list[MetricSeries]:
    """will-it-scale: one value per steady (post-warm-up) interval, per-task rate first."""
    from kbench.scale import scale_from_output
    from kbench.targets.probe_output import ProbeOutput

    names = list(measurement.header["columns"])
    rows = np.column_stack([measurement.columns[name] for name in names]) if measurement.n else np.zeros(
        (0, len(names)), dtype=np.uint64
    )
    result = scale_from_output(ProbeOutput(header=measurement.header, rows=rows))
    steady = result.steady
    prefix = result.benchmark
    idle = steady.idle_fraction[~np.isnan(steady.idle_fraction)]
    return [
        MetricSeries(f"{prefix}.{result.per_task_stat}", "ops/s", "higher", steady.per_task_ops_per_s),
        MetricSeries(f"{prefix}.ops", "ops/s", "higher", steady.total_ops_per_s),
        MetricSeries(f"{prefix}.idle", "fraction", "lower", idle),
    ]
