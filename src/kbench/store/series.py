"""Read queries for history: every finished run as points of its metrics, oldest first.

One flat row per (run, stored summary metric): the run's identity (benchmark, parameters,
machine, target) and version (kernel release, commit, label), and the summary's median,
mean, standard deviation and count. History groups them into series; nothing here judges.

The statements are plain SQL, as ``store/reads.py``'s: each function takes a ``Store`` —
then a read-only SQLite file is read through the standard library's ``sqlite3`` and
``kbench history`` / ``report`` start without importing SQLAlchemy — or an ``Engine``
(the dashboard, a writable or PostgreSQL store), whose connection runs the same text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from kbench.store.codec import decode_array
from kbench.store.reads import Query, _decoded

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from kbench.store.db import Store

CPU_COLUMNS = ("utime_ns", "stime_ns")
"""Sample columns holding a child's CPU time per execution (the ``command`` workload's wait4)."""
_CHUNK = 500

_RUN_COLUMNS = (
    'runs.id AS run_id, runs.benchmark, runs.params, runs.metric AS run_metric, runs.direction AS run_direction, '
    'runs.started_at, runs."commit", runs.label, runs.tags, targets.kind AS target_kind, targets.accel, '
    'targets.kernel_release, machines.fingerprint AS machine_fingerprint, machines.hostname, '
    'machines.id AS machine_id'
)
_RUN_JOINS = (
    "LEFT OUTER JOIN targets ON runs.target_id = targets.id "
    "LEFT OUTER JOIN machines ON runs.machine_id = machines.id"
)


def _query_of(source: Engine | Store) -> tuple[Query, str]:
    """(a function running one statement, the dialect's name) for a Store or an Engine."""
    store_query = getattr(source, "_query", None)
    if store_query is not None:
        return store_query, str(getattr(source, "dialect", "sqlite"))
    engine: Engine = source  # type: ignore[assignment]

    def run(sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        from sqlalchemy import text

        with engine.connect() as conn:
            return [dict(row) for row in conn.execute(text(sql), dict(params)).mappings()]

    return run, engine.dialect.name


def _in(name: str, values: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    """``IN (:name0, :name1, …)`` and its parameters (sqlite3 takes no lists)."""
    keys = [f"{name}{i}" for i in range(len(values))]
    return f"IN ({', '.join(':' + key for key in keys)})", dict(zip(keys, values, strict=True))


def _when(moment: datetime, dialect: str) -> Any:
    """A time as the runs table holds it: naive UTC text on SQLite (SQLAlchemy's format), the
    aware datetime elsewhere."""
    if dialect != "sqlite":
        return moment
    utc = moment.astimezone(UTC) if moment.tzinfo else moment
    return utc.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")


def _filters(
    benchmark: str | None, since: datetime | None, dialect: str, run_ids: Sequence[int] | None = None,
) -> tuple[str, dict[str, Any]]:
    conditions = ["runs.status = 'complete'"]
    params: dict[str, Any] = {}
    if run_ids is not None:
        ids, id_params = _in("rid", list(run_ids))
        conditions.append(f"runs.id {ids}" if run_ids else "1 = 0")
        params.update(id_params)
    if benchmark:
        conditions.append("runs.benchmark LIKE :benchmark")
        params["benchmark"] = benchmark.replace("*", "%")
    if since is not None:
        conditions.append("runs.started_at >= :since")
        params["since"] = _when(since, dialect)
    return " AND ".join(conditions), params


def _point_row(row: Mapping[str, Any]) -> dict[str, Any]:
    return _decoded(row, ("params", "tags"), ("started_at",))


def summary_points(
    source: Engine | Store, *, benchmark: str | None = None, since: datetime | None = None,
    run_ids: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """One row per complete run and stored summary metric, oldest run first.

    ``benchmark`` is a name or a glob (``syscall.*``); ``since`` keeps runs started then or
    later; ``run_ids`` keeps those runs only.
    """
    query, dialect = _query_of(source)
    where, params = _filters(benchmark, since, dialect, run_ids)
    sql = (
        f"SELECT {_RUN_COLUMNS}, summaries.metric, summaries.unit, summaries.median, summaries.mean, "
        f"summaries.stdev, summaries.n FROM runs JOIN summaries ON summaries.run_id = runs.id {_RUN_JOINS} "
        f"WHERE {where} ORDER BY runs.started_at, runs.id"
    )
    return [_point_row(row) for row in query(sql, params)]


def cpu_points(
    source: Engine | Store, *, benchmark: str | None = None, since: datetime | None = None,
    run_ids: Sequence[int] | None = None,
) -> list[dict[str, Any]]:
    """``<benchmark>.cpu`` rows for complete runs that stored per-execution CPU time columns.

    The value is the median over executions of user + system CPU time (ns), computed from
    the stored ``utime_ns`` and ``stime_ns`` sample columns.
    """
    query, dialect = _query_of(source)
    where, params = _filters(benchmark, since, dialect, run_ids)
    sql = (
        f"SELECT {_RUN_COLUMNS} FROM runs JOIN samples ON samples.run_id = runs.id "
        f"AND samples.\"column\" = :cpu_column {_RUN_JOINS} WHERE {where} ORDER BY runs.started_at, runs.id"
    )
    rows = [_point_row(row) for row in query(sql, {**params, "cpu_column": CPU_COLUMNS[0]})]
    columns = _sample_columns(query, [row["run_id"] for row in rows], CPU_COLUMNS)
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


def _sample_columns(query: Query, run_ids: Sequence[int], names: Iterable[str]) -> dict[int, dict[str, np.ndarray]]:
    found: dict[int, dict[str, np.ndarray]] = {}
    wanted = list(names)
    for start in range(0, len(run_ids), _CHUNK):
        ids, id_params = _in("id", list(run_ids[start:start + _CHUNK]))
        columns, column_params = _in("col", wanted)
        sql = (f'SELECT run_id, "column", dtype, codec, count, data FROM samples '
               f'WHERE run_id {ids} AND "column" {columns}')
        for row in query(sql, {**id_params, **column_params}):
            values = decode_array(row["dtype"], row["codec"], bytes(row["data"]), row["count"])
            found.setdefault(int(row["run_id"]), {})[row["column"]] = values
    return found


def _by_chunks(query: Query, sql: str, run_ids: Sequence[int]) -> Iterable[dict[str, Any]]:
    """``sql`` (with ``{ids}`` where the IN list goes) over ``run_ids`` in chunks."""
    for start in range(0, len(run_ids), _CHUNK):
        ids, params = _in("id", list(run_ids[start:start + _CHUNK]))
        yield from query(sql.format(ids=ids), params)


def probe_headers(source: Engine | Store, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """The stored probe headers of some runs (for the units and directions of secondary metrics)."""
    query, _ = _query_of(source)
    headers: dict[int, dict[str, Any]] = {}
    for row in _by_chunks(query, "SELECT id, probe_header FROM runs WHERE id {ids}", run_ids):
        headers[int(row["id"])] = dict(_decoded(row, ("probe_header",))["probe_header"] or {})
    return headers


def median_intervals(source: Engine | Store, run_ids: Sequence[int]) -> dict[tuple[int, str], tuple[float, float]]:
    """(run id, metric) → the stored distribution-free CI of that run's median."""
    query, _ = _query_of(source)
    found: dict[tuple[int, str], tuple[float, float]] = {}
    sql = "SELECT run_id, metric, details FROM summaries WHERE run_id {ids}"
    for row in _by_chunks(query, sql, run_ids):
        interval = (_decoded(row, ("details",))["details"] or {}).get("median_ci")
        if interval and len(interval) == 2:
            found[(int(row["run_id"]), str(row["metric"]))] = (float(interval[0]), float(interval[1]))
    return found


def run_requests(source: Engine | Store, run_ids: Sequence[int]) -> dict[int, dict[str, Any]]:
    """run id → ``{"request": ..., "target": {kind, kernel_release, accel, details}}`` (reproduce lines)."""
    query, _ = _query_of(source)
    found: dict[int, dict[str, Any]] = {}
    sql = ("SELECT runs.id, runs.request, targets.kind, targets.kernel_release, targets.accel, targets.details "
           "FROM runs LEFT OUTER JOIN targets ON runs.target_id = targets.id WHERE runs.id {ids}")
    for raw in _by_chunks(query, sql, run_ids):
        row = _decoded(raw, ("request", "details"))
        found[int(row["id"])] = {
            "request": dict(row["request"] or {}),
            "target": {"kind": row["kind"], "kernel_release": row["kernel_release"], "accel": row["accel"],
                       "details": dict(row["details"] or {})},
        }
    return found


def run_version(source: Engine | Store, run_id: int) -> dict[str, Any]:
    """The version a run measured: ``{"commit", "label"}`` (both None for runs stored without)."""
    query, _ = _query_of(source)
    rows = query('SELECT "commit", label FROM runs WHERE id = :id', {"id": run_id})
    return {"commit": rows[0]["commit"], "label": rows[0]["label"]} if rows else {"commit": None, "label": None}


def runs_fingerprint(source: Engine | Store) -> tuple[int, int, str]:
    """(count, highest id, latest finish) of complete runs: changes whenever a series can change."""
    query, _ = _query_of(source)
    (row,) = query("SELECT COUNT(*) AS count, MAX(id) AS highest, MAX(finished_at) AS latest FROM runs "
                   "WHERE status = 'complete'", {})
    return int(row["count"]), int(row["highest"] or 0), str(row["latest"])


def confirmed_findings(source: Engine | Store) -> list[dict[str, Any]]:
    """The regressions and fixes ``kbench watch`` confirmed (rows of ``watch_findings`` with their watch's
    ``repo``, ``build``, ``job_path`` and ``options`` as ``watch``), oldest first; none
    from a database that has no such table (written by a kbench before schema v9, read-only)."""
    query, _ = _query_of(source)
    try:
        rows = query("SELECT * FROM watch_findings WHERE state = 'confirmed' ORDER BY id", {})
        watches = query("SELECT id, repo, build, job_path, options FROM watches", {})
    except Exception as exc:  # sqlite3's or the driver's error, whichever read it
        if "watch_findings" in str(exc) or "watches" in str(exc) or "no such table" in str(exc).lower():
            return []
        raise
    by_id = {int(w["id"]): _decoded(w, ("options",), ()) for w in watches}
    columns = ("params", "candidate", "confirmation", "verification", "log")
    times = ("created_at", "updated_at", "triage_at")
    return [{**_decoded(row, columns, times), "watch": by_id.get(int(row["watch_id"]))} for row in rows]


def run_machines(source: Engine | Store, run_ids: Sequence[int]) -> dict[int, str]:
    """The fingerprint of the machine that measured each of ``run_ids`` (runs without one are left out)."""
    if not run_ids:
        return {}
    query, _ = _query_of(source)
    where, params = _in("run", [int(i) for i in run_ids])
    rows = query(f"SELECT runs.id AS id, machines.fingerprint AS fingerprint FROM runs "
                 f"JOIN machines ON machines.id = runs.machine_id WHERE runs.id {where}", params)
    return {int(row["id"]): str(row["fingerprint"]) for row in rows}
