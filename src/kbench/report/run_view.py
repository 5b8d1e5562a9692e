"""Everything a report needs about one stored run, rebuilt from the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kbench.engine.measurement import Measurement
from kbench.engine.runner import RunResult
from kbench.engine.series import MetricSeries, metric_series
from kbench.stats.summary import Summary, summarize
from kbench.store.db import RunRecord, Store


@dataclass(frozen=True)
class RunView:
    record: RunRecord
    measurement: Measurement
    values: np.ndarray  # per-operation values in record.unit, in sample order
    summary: Summary | None
    basis: str
    series: list[MetricSeries]


def load_run_view(store: Store, run_id: int) -> RunView:
    """Load a run and its samples and recompute the per-operation values."""
    record = store.get_run(run_id)
    columns = store.load_samples(run_id)
    measurement = Measurement(
        header=record.probe_header or {},
        columns=columns,
        interrupted=record.status == "interrupted",
        stderr=record.tool_output or "",
    )
    subtract = bool(record.request.get("subtract_overhead"))
    series = metric_series(measurement, record.metric, record.unit, record.direction, subtract_overhead=subtract)
    values = series[0].values if series else np.empty(0)
    summary = summarize(values) if values.size else None
    return RunView(
        record=record,
        measurement=measurement,
        values=values,
        summary=summary,
        basis="overhead-corrected" if subtract else "raw",
        series=series,
    )


@dataclass(frozen=True)
class RunReport:
    """What the text and JSON renderings of one run need, from a fresh run or the store."""

    run_id: int
    metric: str
    unit: str
    status: str
    summary: Summary | None
    measurement: Measurement
    values: np.ndarray  # the primary metric's values, in order
    basis: str
    warnings: list[str]
    series: list[MetricSeries]

    @classmethod
    def from_result(cls, result: RunResult) -> RunReport:
        return cls(result.run_id, result.metric, result.benchmark.unit, result.status, result.summary,
                   result.measurement, result.per_op_values, result.basis, result.warnings, result.series)

    @classmethod
    def from_view(cls, view: RunView) -> RunReport:
        record = view.record
        return cls(record.id, record.metric, record.unit, record.status, view.summary, view.measurement,
                   view.values, view.basis, record.warnings, view.series)


def run_json(report: RunReport, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one JSON object ``kbench run --json`` and ``kbench show --json`` print."""
    summary, measurement, series = report.summary, report.measurement, report.series
    header = measurement.header
    data: dict[str, Any] = {
        "run_id": report.run_id,
        "metric": report.metric,
        "unit": report.unit,
        "status": report.status,
        "basis": report.basis,
        "batch": header.get("batch"),
        "timer": header.get("timer"),
        "overhead": measurement.overhead_ns() if header.get("overhead") else None,
        "usage": header.get("usage"),
        "warnings": report.warnings,
    }
    if summary is not None:
        data.update(
            n=summary.n,
            min=summary.min,
            median=summary.p50,
            p90=summary.p90,
            p95=summary.p95,
            p99=summary.p99,
            p999=summary.p999,
            max=summary.max,
            mad=summary.mad,
            mean=summary.mean,
            stdev=summary.stdev,
            median_ci=list(summary.median_ci),
            median_ci_level=summary.median_ci_level,
            outliers=summary.outliers,
            steady_state_index=summary.steady_state_index,
        )
    else:
        data.update(n=0)
    if series and len(series) > 1:
        data["metrics"] = [_series_json(s) for s in series]
    if header.get("trace"):
        from kbench.trace.report import run_trace_json

        data.update(run_trace_json(measurement))
    if header.get("crosscheck"):
        data["crosscheck"] = header["crosscheck"]
    if header.get("tracking"):
        from kbench.trace.tracking_report import tracking_json

        data.update(tracking_json(header))
    data.update(extra or {})
    return data


def _series_json(series: MetricSeries) -> dict[str, Any]:
    summary = summarize(series.values)
    return {
        "metric": series.name, "unit": series.unit, "direction": series.direction, "n": summary.n,
        "values": series.values.tolist(), "min": summary.min, "median": summary.p50, "max": summary.max,
        "mean": summary.mean, "stdev": summary.stdev,
    }
