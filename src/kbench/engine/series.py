"""The metric series of a measurement: one per metric, each with its unit and direction.

A probe or kbench.ko run has one series (per-operation time of every sample); a suite
run has one series per metric the tool reports (one value per iteration).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kbench.engine.measurement import Measurement

SUITE_FORMAT = "kbench-suite/1"


@dataclass(frozen=True)
class MetricSeries:
    name: str
    unit: str
    direction: str
    values: np.ndarray


def metric_series(
    measurement: Measurement, metric: str, unit: str, direction: str, *, subtract_overhead: bool = False
) -> list[MetricSeries]:
    """Every metric of ``measurement``, the primary one (``metric``) first."""
    header = measurement.header
    if header.get("format") == SUITE_FORMAT:
        found = [
            MetricSeries(m["name"], m["unit"], m["direction"], measurement.columns[m["name"]].astype(np.float64))
            for m in header["metrics"]
            if m["name"] in measurement.columns
        ]
        found.sort(key=lambda series: series.name != metric)
        return found
    if measurement.n == 0:
        return []
    values = measurement.per_op(unit, subtract_overhead=subtract_overhead)
    return [MetricSeries(metric, unit, direction, values)]
