"""Everything a report needs about one stored run, rebuilt from the store.

The summaries are the ones stored with the run (computed once, when it was measured);
only a run stored without them is summarised again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kbench.contract.measurement import Measurement
from kbench.contract.series import MetricSeries
from kbench.engine.series import metric_series
from kbench.stats.summary import Summary, summarize
from kbench.store.db import RunRecord, Store

if TYPE_CHECKING:
    from kbench.engine.runner import RunResult


@dataclass(frozen=True)
class RunView:
    record: RunRecord
    measurement: Measurement
    values: np.ndarray  # per-operation values in record.unit, in sample order
    summary: Summary | None
    basis: str
    series: list[MetricSeries]
    summaries: dict[str, Summary] = field(default_factory=dict)  # every metric's, by name


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
    summaries = stored_summaries(record)
    summary = summaries.get(record.metric) or (summarize(values) if values.size else None)
    return RunView(
        record=record,
        measurement=measurement,
        values=values,
        summary=summary,
        basis="overhead-corrected" if subtract else "raw",
        series=series,
        summaries=summaries,
    )


def stored_summaries(record: RunRecord) -> dict[str, Summary]:
    """The summary stored for each metric of the run (none for a run that stored none)."""
    found = {}
    for row in record.summaries:
        try:
            found[row["metric"]] = Summary.from_dict(row["details"])
        except (KeyError, TypeError, ValueError):
            continue  # stored by a kbench whose Summary had other fields: summarised again
    return found


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
    summaries: Mapping[str, Summary] = field(default_factory=dict)  # stored ones, by metric

    @classmethod
    def from_result(cls, result: RunResult) -> RunReport:
        return cls(result.run_id, result.metric, result.benchmark.unit, result.status, result.summary,
                   result.measurement, result.per_op_values, result.basis, result.warnings, result.series)

    @classmethod
    def from_view(cls, view: RunView) -> RunReport:
        record = view.record
        return cls(record.id, record.metric, record.unit, record.status, view.summary, view.measurement,
                   view.values, view.basis, record.warnings, view.series, view.summaries)


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
        data["metrics"] = [_series_json(s, report.summaries.get(s.name)) for s in series]
    if header.get("trace"):
        from kbench.report.trace_run import run_trace_json

        data.update(run_trace_json(measurement))
    if header.get("crosscheck"):
        data["crosscheck"] = header["crosscheck"]
    if header.get("tracking"):
        from kbench.trace.tracking_report import tracking_json

        data.update(tracking_json(header))
    data.update(extra or {})
    return data


def run_context_json(record: RunRecord) -> dict[str, Any]:
    """What was measured, where and when: the keys ``run --json`` and ``show --json`` add to ``run_json``."""
    return {
        "benchmark": record.benchmark,
        "params": record.params,
        "target": record.target,
        "tags": record.tags,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
    }


def summary_line(name: str, median: float | None, unit: str, n: int) -> str:
    """``syscall.getppid median 61.2 ns n=10000``: one run (or instance) on one line, for ``-q``."""
    value = f"{median:.6g}" if median is not None else "-"
    return f"{name} median {value} {unit} n={n}"


def _series_json(series: MetricSeries, stored: Summary | None) -> dict[str, Any]:
    summary = stored or summarize(series.values)
    return {
        "metric": series.name, "unit": series.unit, "direction": series.direction, "n": summary.n,
        "values": series.values.tolist(), "min": summary.min, "median": summary.p50, "max": summary.max,
        "mean": summary.mean, "stdev": summary.stdev,
    }
