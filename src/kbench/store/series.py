"""Read queries for history: every finished run as points of its metrics, oldest first.

One flat row per (run, stored summary metric): the run's identity (benchmark, parameters,
machine, target) and version (kernel release, commit, label), and the summary's median,
mean, standard deviation and count. History groups them into series; nothing here judges.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine, Select, and_, func, select

from kbench.store import schema
from kbench.store.codec import decode_array

CPU_COLUMNS = ("utime_ns", "stime_ns")
"""Sample columns holding a child's CPU time per execution (the ``command`` workload's wait4)."""
_CHUNK = 500


def _run_columns() -> list[Any]:
    runs, targets, machines = schema.runs, schema.targets, schema.machines
    return [
        runs.c.id.label("run_id"), runs.c.benchmark, runs.c.params, runs.c.metric.label("run_metric"),
        runs.c.direction.label("run_direction"), runs.c.started_at, runs.c.commit, runs.c.label, runs.c.tags,
        targets.c.kind.label("target_kind"), targets.c.accel, targets.c.kernel_release,
        machines.c.fingerprint.label("machine_fingerprint"), machines.c.hostname, machines.c.id.label("machine_id"),
    ]


def _filtered(
    query: Select[Any], benchmark: str | None, since: datetime | None, run_ids: Sequence[int] | None = None,
) -> Select[Any]:
    runs = schema.runs
    query = query.where(runs.c.status == "complete")
    if run_ids is not None:
        query = query.where(runs.c.id.in_(list(run_ids)))
    if benchmark:
        query = query.where(runs.c.benchmark.like(benchmark.replace("*", "%")))
    if since is not None:
        query = query.where(runs.c.started_at >= since)
    return query


def _runs_joined(table: Any, onclause: Any) -> Any:
    """runs ⋈ ``table`` on ``onclause``, with each run's target and machine when known."""
    runs, targets, machines = schema.runs, schema.targets, schema.machines
    return (
        runs.join(table, onclause)
        .outerjoin(targets, runs.c.target_id == targets.c.id)
        .outerjoin(machines, runs.c.machine_id == machines.c.id)
    )


def summary_points(
    engine: Engine, *, benchmark: str | None = None, since: datetime | None = None,
    run_ids: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """One row per complete run and stored summary metric, oldest run first.

    ``benchmark`` is a name or a glob (``syscall.*``); ``since`` keeps runs started then or
    later; ``run_ids`` keeps those runs only.
    """
    summaries = schema.summaries
    query = select(
        *_run_columns(), summaries.c.metric, summaries.c.unit, summaries.c.median, summaries.c.mean,
        summaries.c.stdev, summaries.c.n,
    ).select_from(_runs_joined(summaries, summaries.c.run_id == schema.runs.c.id))
    query = _filtered(query, benchmark, since, run_ids).order_by(schema.runs.c.started_at, schema.runs.c.id)
    with engine.connect() as conn:
        return [dict(row) for row in conn.execute(query).mappings()]


def cpu_points(
    engine: Engine, *, benchmark: str | None = None, since: datetime | None = None,
    run_ids: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """``<benchmark>.cpu`` rows for complete runs that stored per-execution CPU time columns.

    The value is the median over executions of user + system CPU time (ns), computed from
    the stored ``utime_ns`` and ``stime_ns`` sample columns.
    """
    samples = schema.samples
    query = select(*_run_columns()).select_from(
        _runs_joined(samples, and_(samples.c.run_id == schema.runs.c.id, samples.c.column == CPU_COLUMNS[0]))
    )
    query = _filtered(query, benchmark, since, run_ids).order_by(schema.runs.c.started_at, schema.runs.c.id)
    with engine.connect() as conn:
        rows = [dict(row) for row in conn.execute(query).mappings()]
        columns = _sample_columns(conn, [row["run_id"] for row in rows], CPU_COLUMNS)
    points = []
    for row in rows:
        found = columns.get(row["run_id"], {})
        if set(found) != set(CPU_COLUMNS) or not found[CPU_COLUMNS[0]].size:
            continue
        cpu = found["utime_ns"].astype(np.float64) + found["stime_ns"].astype(np.float64)
        points.append({
            **row, "metric": f"{row['benchmark']}.cpu", "unit": "ns", "median": float(np.median(cpu)),
            "mean": float(cpu.mean()), "stdev": float(cpu.std(ddof=1)) if cpu.size > 1 else 0.0, "n": int(cpu.size),
        })
    return points


def _sample_columns(conn: Any, run_ids: Sequence[int], names: Iterable[str]) -> dict[int, dict[str, np.ndarray]]:
    samples = schema.samples
    found: dict[int, dict[str, np.ndarray]] = {}
    wanted = list(names)
    for start in range(0, len(run_ids), _CHUNK):
        chunk = list(run_ids[start:start + _CHUNK])
        query = select(samples).where(samples.c.run_id.in_(chunk) & samples.c.column.in_(wanted))
        for row in conn.execute(query).mappings():
            values = decode_array(row["dtype"], row["codec"], row["data"], row["count"])
            found.setdefault(row["run_id"], {})[row["column"]] = values
    return found


def probe_headers(engine: Engine, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The stored probe headers of some runs (for the units and directions of secondary metrics)."""
    runs = schema.runs
    headers: dict[int, dict[str, Any]] = {}
    with engine.connect() as conn:
        for start in range(0, len(run_ids), _CHUNK):
            chunk = list(run_ids[start:start + _CHUNK])
            for run_id, header in conn.execute(select(runs.c.id, runs.c.probe_header).where(runs.c.id.in_(chunk))):
                headers[int(run_id)] = dict(header or {})
    return headers


def median_intervals(engine: Engine, run_ids: Sequence[int]) -> dict[tuple[int, str], tuple[float, float]]:
    """(run id, metric) → the stored distribution-free CI of that run's median."""
    summaries = schema.summaries
    found: dict[tuple[int, str], tuple[float, float]] = {}
    with engine.connect() as conn:
        for start in range(0, len(run_ids), _CHUNK):
            chunk = list(run_ids[start:start + _CHUNK])
            query = select(summaries.c.run_id, summaries.c.metric, summaries.c.details).where(
                summaries.c.run_id.in_(chunk)
            )
            for run_id, metric, details in conn.execute(query):
                interval = (details or {}).get("median_ci")
                if interval and len(interval) == 2:
                    found[(int(run_id), str(metric))] = (float(interval[0]), float(interval[1]))
    return found


def run_requests(engine: Engine, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """run id → ``{"request": ..., "target": {kind, kernel_release, accel, details}}`` (reproduce lines)."""
    runs, targets = schema.runs, schema.targets
    found: dict[int, dict[str, Any]] = {}
    query = select(runs.c.id, runs.c.request, targets.c.kind, targets.c.kernel_release, targets.c.accel,
                   targets.c.details).select_from(runs.outerjoin(targets, runs.c.target_id == targets.c.id))
    with engine.connect() as conn:
        for start in range(0, len(run_ids), _CHUNK):
            chunk = list(run_ids[start:start + _CHUNK])
            for row in conn.execute(query.where(runs.c.id.in_(chunk))).mappings():
                found[int(row["id"])] = {
                    "request": dict(row["request"] or {}),
                    "target": {"kind": row["kind"], "kernel_release": row["kernel_release"], "accel": row["accel"],
                               "details": dict(row["details"] or {})},
                }
    return found


def run_version(engine: Engine, run_id: int) -> dict[str, Any]:
    """The version a run measured: ``{"commit", "label"}`` (both None for runs stored without)."""
    runs = schema.runs
    with engine.connect() as conn:
        row = conn.execute(select(runs.c.commit, runs.c.label).where(runs.c.id == run_id)).first()
    return {"commit": row[0], "label": row[1]} if row else {"commit": None, "label": None}


def runs_fingerprint(engine: Engine) -> tuple[int, int, str]:
    """(count, highest id, latest finish) of complete runs: changes whenever a series can change."""
    runs = schema.runs
    query = select(func.count(), func.max(runs.c.id), func.max(runs.c.finished_at)).where(runs.c.status == "complete")
    with engine.connect() as conn:
        count, highest, latest = conn.execute(query).one()
    return int(count), int(highest or 0), str(latest)
