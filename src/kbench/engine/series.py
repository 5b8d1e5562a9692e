"""The metric series of a measurement: one per metric, each with its unit and direction.

The kind that wrote the measurement says what its series are (``kbench.kinds``): a
probe or kbench.ko run has one (the per-operation time of every sample), a suite run
one per metric the tool reports, a will-it-scale run one per metric and interval.
"""

from __future__ import annotations

import numpy as np

from kbench.contract.formats import CROSSCHECK_FORMAT
from kbench.contract.measurement import Measurement
from kbench.contract.series import MetricSeries as MetricSeries
from kbench.kinds.base import PrimaryMetric, per_operation_series
from kbench.kinds.registry import kind_that_wrote


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
    if measurement.header.get("format") == CROSSCHECK_FORMAT:
        values = measurement.columns.get("value")  # one method's values, as measured
        return [] if values is None else [MetricSeries(metric, unit, direction, values.astype(np.float64))]
    primary = PrimaryMetric(metric, unit, direction)
    kind = kind_that_wrote(measurement.header)
    if kind is None:  # a header of no known format: its samples are timed operations
        return per_operation_series(measurement, primary, subtract_overhead=subtract_overhead)
    return kind.series(measurement, primary, subtract_overhead=subtract_overhead)
