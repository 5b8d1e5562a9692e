"""Run one benchmark on one target, summarise it, and store everything."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, is_dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from kbench import interrupts
from kbench.catalog.scale import primary_metric
from kbench.contract.benchmark import Benchmark
from kbench.contract.limits import request_problems
from kbench.contract.measurement import Measurement
from kbench.contract.request import BadRequest, RunRequest
from kbench.contract.spill import spilling_to
from kbench.contract.vocabulary import LOWER_IS_BETTER
from kbench.engine.series import MetricSeries, metric_series
from kbench.engine.warnings import run_warnings
from kbench.kinds.registry import kind_of, measure
from kbench.stats.summary import Summary, summarize
from kbench.store.db import Store, SummaryRecord
from kbench.store.errors import StoreError, database_error_message
from kbench.store.records import summary_columns as summary_columns  # its old home
from kbench.store.recovery import save_recovery
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

    @property
    def counter_series(self) -> list[MetricSeries]:
        """The run's perf counters per operation as one-value series (``kbench.profile.counters``)."""
        from kbench.profile.counters import counter_series

        return counter_series(self.measurement.header, self.metric)


def execute_run(
    store: Store,
    benchmark: Benchmark,
    request: RunRequest,
    target: Target,
    progress: ProgressCallback | None = None,
    context_warnings: Sequence[str] = (),
) -> RunResult:
    """Measure ``benchmark`` on ``target`` as ``request`` says, and store the run.

    The run row is written before measuring (status ``running``, with its owner) and
    completed in one transaction afterwards. A KeyboardInterrupt (Ctrl-C or SIGTERM)
    still stores every finished sample with status ``interrupted``; a target failure
    stores status ``failed`` with the error and re-raises. When the database fails after
    the run was measured, the run goes to a recovery file and SamplesNotStored (a
    StoreError naming the file) is raised: measured samples are never just dropped.
    """
    benchmark.validate_params(request.params)
    problems = request_problems(request, kind_of(benchmark).limits)
    if problems:  # callers check earlier, before a target starts; this is the last line
        raise BadRequest("; ".join(str(problem) for problem in problems))
    target_info = target.info()
    sysinfo = target.sysinfo()
    started = begin_stored_run(store, benchmark, request, target_info, sysinfo)
    run_id = started.run_id
    spill, spill_problem = _spill_destination(store, run_id)
    try:
        with spilling_to(spill):
            measurement = measure(target, benchmark, request, progress)
    except TargetError as exc:
        _mark_unfinished(store, run_id, "failed", str(exc))
        raise
    except KeyboardInterrupt:
        _mark_unfinished(store, run_id, "interrupted", "interrupted before the measurement came back")
        raise
    except BaseException as exc:
        _mark_unfinished(store, run_id, "failed", f"{type(exc).__name__}: {exc}")
        raise
    warnings = [*context_warnings, *([spill_problem] if spill_problem else [])]
    return finish_stored_run(store, started, benchmark, request, measurement, sysinfo, warnings)


def _spill_destination(store: Store, run_id: int) -> tuple[Path | None, str | None]:
    """Where run ``run_id`` streams its samples while measured, or why nowhere."""
    path = store.spill_path(run_id)
    if path is None:
        return None, None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return None, (f"the samples were not streamed to disk while measured (cannot create {path.parent}: "
                      f"{exc.strerror or exc}): a kbench killed meanwhile would have lost them")
    try:  # a spill that cannot be written must not fail the run (the probe refuses a --spill it cannot open)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644))
    except OSError as exc:
        return None, (f"the samples were not streamed to disk while measured (cannot write {path}: "
                      f"{exc.strerror or exc}): a kbench killed meanwhile would have lost them")
    return path, None


@dataclass(frozen=True)
class StartedRun:
    """A run's row written before measuring, with what a recovery file needs to redo it."""

    run_id: int
    fields: dict[str, Any]
    started_at: datetime


def begin_stored_run(
    store: Store, benchmark: Benchmark, request: RunRequest, target_info: Any, sysinfo: dict[str, Any]
) -> StartedRun:
    """The run's row, status ``running``, before anything is measured (a crash leaves a trace)."""
    started_at = datetime.now(UTC)
    fields: dict[str, Any] = {
        "benchmark": benchmark.name,
        "metric": primary_metric(benchmark, request.params),
        "unit": benchmark.unit,
        "direction": benchmark.direction,
        "params": request.params,
        "request": request.to_dict(),
        "sysinfo": sysinfo,
        "target": _as_dict(target_info),
        "tags": list(request.tags),
        "commit": request.commit,
        "label": request.label,
    }
    return StartedRun(store.begin_run(**fields, started_at=started_at), fields, started_at)


def finish_stored_run(
    store: Store,
    started: StartedRun,
    benchmark: Benchmark,
    request: RunRequest,
    measurement: Measurement,
    sysinfo: dict[str, Any],
    context_warnings: Sequence[str] = (),
) -> RunResult:
    """Summarise ``measurement`` and complete the started run in one transaction.

    The measurement is in memory only (a guest's samples were fetched, most of them never
    spilled): an interrupt now must not lose it. A first one while it is summarised (seconds
    for millions of samples) is noted, and the run is stored ``interrupted`` with every
    sample; a second one stores the samples without their summaries (readers compute them)
    and is then raised. The row is never left ``running``."""
    run_id = started.run_id
    metric = primary_metric(benchmark, request.params)
    basis = "overhead-corrected" if request.subtract_overhead else "raw"
    again: KeyboardInterrupt | None = None
    series: list[MetricSeries] = []
    summaries: list[Summary] = []
    try:
        with interrupts.keep_first() as kept:
            series = metric_series(
                measurement, metric, benchmark.unit, benchmark.direction,
                subtract_overhead=request.subtract_overhead,
            )
            series = [s for s in series if s.values.size]  # a run interrupted before its first value
            summaries = [summarize(s.values) for s in series]
    except KeyboardInterrupt as exc:
        again, series, summaries = exc, [], []
    status = "interrupted" if measurement.interrupted or kept.stopped or again is not None else "complete"
    records = [
        SummaryRecord(
            metric=s.name, unit=s.unit, basis=basis if s.name == metric else "raw",
            values=summary_columns(summary), details=summary.to_dict(),
        )
        for s, summary in zip(series, summaries, strict=True)
    ]
    summary = summaries[0] if series else None
    values = series[0].values if series else np.empty(0)
    warnings = [*context_warnings, *run_warnings(measurement, summary, sysinfo)]
    if again is not None:
        warnings.append("interrupted again while its samples were summarised: stored with every sample and no "
                        "summary (show computes it)")
    finished: dict[str, Any] = {
        "status": status,
        "columns": measurement.columns,
        "probe_header": measurement.header,
        "summaries": records,
        "warnings": warnings,
        "tool_output": measurement.stderr or None,
    }
    try:
        with interrupts.deferred():  # an interrupt now would lose what was measured
            store.finish_run(run_id, **finished)
    except Exception as exc:
        reason = str(exc) if isinstance(exc, StoreError) else database_error_message(exc, store.where)
        if reason is None:
            raise
        not_stored = save_recovery(
            reason=reason, database=store.where, run_id=run_id,
            run={**started.fields, "started_at": started.started_at.isoformat()}, error=None, **finished,
        )
        if not_stored.path is not None:  # the recovery file holds them all: the spill would store them twice
            store.discard_spill(run_id)
        where = f"they are in {not_stored.path}" if not_stored.path else "they were lost"
        _mark_unfinished(store, run_id, "failed", f"measured, but its samples could not be stored ({reason}); {where}")
        raise not_stored from exc
    store.discard_spill(run_id)
    if again is not None:
        raise again
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


def store_failed_start(store: Store, request: RunRequest, target: dict[str, Any], error: str) -> int:
    """A ``failed`` run for a request whose target never started (a module of the user's that
    did not compile): the benchmark is known only by name then, an in-kernel one (cycles,
    lower is better). Returns its id."""
    from kbench.sysinfo.collect import collect_sysinfo

    run_id = store.begin_run(
        benchmark=request.benchmark, metric=f"{request.benchmark}.cycles", unit="cycles", direction=LOWER_IS_BETTER,
        params=request.params, request=request.to_dict(), sysinfo=collect_sysinfo(), target=target,
        tags=request.tags, commit=request.commit, label=request.label,
    )
    _mark_unfinished(store, run_id, "failed", error)
    return run_id


def _mark_unfinished(store: Store, run_id: int, status: str, error: str) -> None:
    """Record why a run produced no measurement, with the samples its spill kept. If even
    that fails, the original error matters more: the run stays ``running`` and the next
    kbench marks it ``abandoned`` and stores the spill's samples with it."""
    try:
        with interrupts.deferred():  # a second Ctrl-C here would leave the row ``running``
            store.finish_unfinished(run_id, status=status, error=error)
    except Exception as exc:
        if not isinstance(exc, StoreError | OSError | ValueError) and database_error_message(exc) is None:
            raise


def _as_dict(value: Any) -> dict[str, Any]:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    return dict(value)
