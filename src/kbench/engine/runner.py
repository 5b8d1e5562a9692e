"""Run one benchmark on one target, summarise it, and store everything."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

import numpy as np

from kbench.catalog.benchmarks import Benchmark
from kbench.catalog.scale import primary_metric
from kbench.engine.measurement import Measurement
from kbench.engine.request import RunRequest
from kbench.engine.series import MetricSeries, metric_series
from kbench.engine.warnings import run_warnings
from kbench.stats.summary import Summary, summarize
from kbench.store.db import Store, SummaryRecord
from kbench.targets.base import ProgressCallback, Target, TargetError


@dataclass(frozen=True)
class RunResult:
    """What a finished (or interrupted) run produced."""

    run_id: int
    benchmark: Benchmark
    metric: str
    status: str
    measurement: Measurement
    summary: Summary | None
    basis: str
    warnings: list[str]
    per_op_values: np.ndarray
    series: list[MetricSeries]


def execute_run(
    store: Store,
    benchmark: Benchmark,
    request: RunRequest,
    target: Target,
    progress: ProgressCallback | None = None,
    context_warnings: Sequence[str] = (),
) -> RunResult:
    """Measure ``benchmark`` on ``target`` as ``request`` says, and store the run.

    The run row is written before measuring (status ``running``) and completed in one
    transaction afterwards. A KeyboardInterrupt still stores every finished sample with
    status ``interrupted``; a target failure stores status ``failed`` with the error and
    re-raises.
    """
    benchmark.validate_params(request.params)
    target_info = target.info()
    sysinfo = target.sysinfo()
    run_id = begin_stored_run(store, benchmark, request, target_info, sysinfo)
    try:
        measurement = target.measure(benchmark, request, progress)
    except TargetError as exc:
        store.finish_run(run_id, status="failed", error=str(exc))
        raise
    except KeyboardInterrupt:
        store.finish_run(run_id, status="interrupted", error="interrupted before any sample was taken")
        raise
    except BaseException as exc:
        store.finish_run(run_id, status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    return finish_stored_run(store, run_id, benchmark, request, measurement, sysinfo, context_warnings)


def begin_stored_run(
    store: Store, benchmark: Benchmark, request: RunRequest, target_info: Any, sysinfo: dict[str, Any]
) -> int:
    """The run's row, status ``running``, before anything is measured (a crash leaves a trace)."""
    return store.begin_run(
        benchmark=benchmark.name,
        metric=primary_metric(benchmark, request.params),
        unit=benchmark.unit,
        direction=benchmark.direction,
        params=request.params,
        request=request.to_dict(),
        sysinfo=sysinfo,
        target=_as_dict(target_info),
        tags=request.tags,
    )


def finish_stored_run(
    store: Store,
    run_id: int,
    benchmark: Benchmark,
    request: RunRequest,
    measurement: Measurement,
    sysinfo: dict[str, Any],
    context_warnings: Sequence[str] = (),
) -> RunResult:
    """Summarise ``measurement`` and complete the run ``run_id`` in one transaction."""
    metric = primary_metric(benchmark, request.params)
    status = "interrupted" if measurement.interrupted else "complete"
    basis = "overhead-corrected" if request.subtract_overhead else "raw"
    series = metric_series(
        measurement, metric, benchmark.unit, benchmark.direction,
        subtract_overhead=request.subtract_overhead,
    )
    summaries = [summarize(s.values) for s in series]
    records = [
        SummaryRecord(
            metric=s.name, unit=s.unit, basis=basis if s.name == metric else "raw",
            values=_summary_columns(summary), details=summary.to_dict(),
        )
        for s, summary in zip(series, summaries, strict=True)
    ]
    summary = summaries[0] if series else None
    values = series[0].values if series else np.empty(0)
    warnings = [*context_warnings, *run_warnings(measurement, summary, sysinfo)]
    store.finish_run(
        run_id,
        status=status,
        columns=measurement.columns,
        probe_header=measurement.header,
        summaries=records,
        warnings=warnings,
        tool_output=measurement.stderr or None,
    )
    return RunResult(
        run_id=run_id,
        benchmark=benchmark,
        metric=metric,
        status=status,
        measurement=measurement,
        summary=summary,
        basis=basis,
        warnings=warnings,
        per_op_values=values,
        series=series,
    )


def _summary_columns(summary: Summary) -> dict[str, Any]:
    return {
        "n": summary.n,
        "min": summary.min,
        "median": summary.p50,
        "p90": summary.p90,
        "p95": summary.p95,
        "p99": summary.p99,
        "max": summary.max,
        "mean": summary.mean,
        "stdev": summary.stdev,
        "mad": summary.mad,
        "steady_state_index": summary.steady_state_index,
    }


def _as_dict(value: Any) -> dict[str, Any]:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return dict(value)
