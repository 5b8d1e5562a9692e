"""The store's run readings as SQL text: one code path for every database and connection.

``Store.get_run``, ``Store.load_samples``, ``Store.list_runs`` and ``Store.schema_version``
run these queries. The SQL is plain (named ``:parameters``, one dialect-specific condition
for tags) so that the same text runs through SQLAlchemy (``text()``, any database) and
through the standard library's ``sqlite3`` (a read-only SQLite file: ``kbench results``
and ``kbench show`` then start without importing SQLAlchemy). The rows are decoded here
the way SQLAlchemy's column types decode them (JSON, times), whichever driver gave them.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Collection, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbench.contract.spill import SpillDamaged, SpillHead, read_spill, spill_head
from kbench.store.errors import DAMAGED_ADVICE, RunNotFound, StoreError, storable_id
from kbench.store.liveness import Liveness
from kbench.store.liveness import Query as Query
from kbench.store.records import ADDED_COLUMNS, RunRecord
from kbench.store.spills import spill_file, spilled_rows

if TYPE_CHECKING:
    import numpy as np


_RUN_JSON = ("params", "request", "timer", "overhead", "probe_header", "sysinfo", "noise", "warnings", "tags")
_RUN_TIMES = ("started_at", "finished_at")


def schema_version(query: Query) -> int:
    rows = query("SELECT value FROM kbench_meta WHERE key = 'schema_version'", {})
    if len(rows) != 1:
        raise StoreError("the database has no schema version: it is not a kbench database")
    return int(rows[0]["value"])


def missing_columns(query: Query, dialect: str) -> list[str]:
    """The columns migrations add (``ADDED_COLUMNS``) that this database's tables lack, as
    ``table.column``; a table that does not exist lacks nothing here."""
    missing = []
    for table, columns in ADDED_COLUMNS.items():
        if dialect == "sqlite":
            rows = query(f"PRAGMA table_info({table})", {})
        else:
            rows = query("SELECT column_name AS name FROM information_schema.columns "
                         "WHERE table_name = :table AND table_schema = current_schema()", {"table": table})
        present = {row["name"] for row in rows}
        if present:
            missing += [f"{table}.{column}" for column in columns if column not in present]
    return missing


def get_run(query: Query, run_id: int, spill_dir: Path | None = None, *, dialect: str = "sqlite",
            where: str = "") -> RunRecord:
    """Run ``run_id`` with its target and summaries. RunNotFound if there is none; StoreError
    if the database is damaged where the run is (a SQLite runs table whose pages no longer
    hold what they say can hide a row: not found is then a damaged file, not a missing run)."""
    if not storable_id(run_id):
        raise RunNotFound(f"no run with id {run_id}")
    found = query("SELECT * FROM runs WHERE id = :id", {"id": run_id})
    if not found:
        if dialect == "sqlite":
            _check_runs_table(query, where)
        raise RunNotFound(f"no run with id {run_id}")
    try:
        row = _decoded(found[0], _RUN_JSON, _RUN_TIMES)
        target = None
        if row["target_id"] is not None:
            targets = query("SELECT * FROM targets WHERE id = :id", {"id": row["target_id"]})
            target = _decoded(targets[0], ("details",)) if targets else None
        summaries = [_decoded(s, ("details",))
                     for s in query("SELECT * FROM summaries WHERE run_id = :id", {"id": run_id})]
    except (ValueError, TypeError, KeyError) as exc:  # JSON or times that do not decode: damaged bytes
        raise StoreError(f"results database {where}: run {run_id} is stored damaged ({type(exc).__name__}: "
                         f"{exc}); {DAMAGED_ADVICE}") from exc
    row = as_seen(row, spill_dir, Liveness(query))
    why = row.pop("abandoned_because", None)
    if why is not None and not row.get("error"):
        row["error"] = f"abandoned: {why}"
    if row.get("spilled"):
        head = _spill_head(spill_dir, run_id)
        if head is not None and row.get("probe_header") is None:
            row["probe_header"] = {**head.header, "n": head.rows}
    return _run_record(row, target, summaries)


def _check_runs_table(query: Query, where: str) -> None:
    """StoreError if SQLite's own check of the runs table (and its indexes) finds damage."""
    problems = [str(next(iter(row.values()))) for row in query("PRAGMA quick_check(runs)", {})]
    if problems and problems != ["ok"]:  # none: a database not made yet, read as empty
        first = " ".join(problems[0].replace("*** in database main ***", "").split())
        raise StoreError(f"results database {where}: the runs table is damaged ({first}); {DAMAGED_ADVICE}")


def latest_calibration(query: Query, benchmark: str, target: str) -> dict[str, Any] | None:
    """The newest calibrations row of ``benchmark`` on ``target`` (JSON and times decoded), or None."""
    rows = query("SELECT * FROM calibrations WHERE benchmark = :benchmark AND target = :target "
                 "ORDER BY id DESC LIMIT 1", {"benchmark": benchmark, "target": target})
    if not rows:
        return None
    return _decoded(rows[0], ("params", "trials", "run_ids", "mde"), ("created_at",))


def load_samples(query: Query, run_id: int, where: str, spill_dir: Path | None = None) -> dict[str, np.ndarray]:
    """Every stored column of a run, in the order the samples were taken; for a run not
    finished (or not stored since), the samples its spill holds so far."""
    from kbench.store.codec import decode_array

    rows = query('SELECT "column", dtype, codec, count, data FROM samples WHERE run_id = :id', {"id": run_id})
    if not rows and spill_dir is not None:
        spilled = _read_spill(spill_dir, run_id)
        if spilled is not None:
            return spilled
    try:
        return {row["column"]: decode_array(row["dtype"], row["codec"], bytes(row["data"]), row["count"])
                for row in rows}
    except (ValueError, zlib.error) as exc:
        raise StoreError(f"results database {where}: the samples of run {run_id} are damaged ({exc})") from exc


def list_runs(
    query: Query,
    dialect: str,
    *,
    benchmark: str | None = None,
    status: str | None = None,
    kernel_release: str | None = None,
    tag: str | None = None,
    limit: int | None = 50,
    spill_dir: Path | None = None,
    where: str = "",
) -> list[dict[str, Any]]:
    """Newest first: id, benchmark, params, status, n, started, kernel, median and unit. Every
    filter is part of the query, so ``limit`` (None: no limit) counts matching runs.
    StoreError (naming ``where``) if the runs are stored damaged."""
    conditions = []
    params: dict[str, Any] = {}
    if benchmark:
        conditions.append("runs.benchmark LIKE :benchmark")
        params["benchmark"] = benchmark.replace("*", "%")
    if status:
        # A read-only view shows runs whose kbench is gone as abandoned without storing it.
        stored = ("running", "abandoned") if status in ("running", "abandoned") else (status,)
        conditions.append(f"runs.status IN ({', '.join(f':status{i}' for i in range(len(stored)))})")
        params.update({f"status{i}": value for i, value in enumerate(stored)})
    if kernel_release:
        conditions.append("targets.kernel_release = :kernel_release")
        params["kernel_release"] = kernel_release
    if tag:
        # The JSON list of tags holds ``tag`` exactly; in the query, so that ``limit`` counts only those runs.
        if dialect == "postgresql":
            conditions.append("CAST(runs.tags AS JSONB) @> CAST(:tags AS JSONB)")
            params["tags"] = json.dumps([tag])
        else:
            conditions.append("EXISTS (SELECT 1 FROM json_each(runs.tags) AS tag WHERE tag.value = :tag)")
            params["tag"] = tag
    sql = (
        "SELECT runs.id, runs.benchmark, runs.params, runs.metric, runs.status, runs.n_samples, runs.started_at, "
        "runs.tags, "
        "targets.kind, targets.kernel_release, targets.accel, summaries.median, summaries.unit, "
        "runs.owner_pid, runs.owner_boot_id, runs.owner_host, runs.heartbeat_at, runs.task_key "
        "FROM runs LEFT OUTER JOIN targets ON runs.target_id = targets.id "
        "LEFT OUTER JOIN summaries ON summaries.run_id = runs.id AND summaries.metric = runs.metric"
        + (" WHERE " + " AND ".join(conditions) if conditions else "")
        + " ORDER BY runs.id DESC"
        + (" LIMIT :limit" if limit is not None else "")
    )
    if limit is not None:
        params["limit"] = limit
    found = query(sql, params)
    if not found and dialect == "sqlite":
        _check_runs_table(query, where)  # an empty listing of a damaged table is not "no runs"
    liveness = Liveness(query)
    try:
        rows = [as_seen(_decoded(row, ("tags", "params"), ("started_at",)), spill_dir, liveness) for row in found]
    except (ValueError, TypeError) as exc:
        raise StoreError(f"results database {where}: a run is stored damaged ({type(exc).__name__}: {exc}); "
                         f"{DAMAGED_ADVICE}") from exc
    for row in rows:
        for key in ("owner_pid", "owner_boot_id", "owner_host", "heartbeat_at", "task_key", "spilled",
                    "abandoned_because"):
            row.pop(key, None)
    if status:
        rows = [r for r in rows if r["status"] == status]
    return rows


def as_seen(row: dict[str, Any], spill_dir: Path | None = None, liveness: Liveness | None = None) -> dict[str, Any]:
    """A run row as a writing kbench would leave it (for read-only views; a writing open
    stores the change): ``running`` shown as ``abandoned`` once its kbench is gone
    (``liveness``: its pid on this host, its heartbeat from another, its fleet lease),
    and a run without samples whose spill holds some with that many (``spilled``: True)."""
    if row.get("status") == "running" and liveness is not None:
        why = liveness.why_gone(row)
        if why is not None:
            row["status"], row["abandoned_because"] = "abandoned", why
    if row.get("status") in _UNFINISHED and not row.get("n_samples") and "id" in row:
        spilled = spilled_rows(spill_dir, int(row["id"]))
        if spilled:
            row["n_samples"], row["spilled"] = spilled, True
    return row


_UNFINISHED = ("running", "abandoned", "failed", "interrupted")
"""Statuses of runs that may have samples only in their spill."""


def _spill_head(spill_dir: Path | None, run_id: int) -> SpillHead | None:
    if spill_dir is None:
        return None
    try:
        return spill_head(spill_file(spill_dir, run_id))
    except (SpillDamaged, OSError):
        return None


def _read_spill(spill_dir: Path, run_id: int) -> dict[str, np.ndarray] | None:
    try:
        contents = read_spill(spill_file(spill_dir, run_id))
    except (SpillDamaged, OSError):
        return None
    return contents.columns if contents is not None and contents.rows else None


def _decoded(row: Mapping[str, Any], json_columns: tuple[str, ...], times: tuple[str, ...] = ()) -> dict[str, Any]:
    """The row as SQLAlchemy's JSON and DateTime types give it: SQLite hands JSON over as
    text and times as ISO text (naive, in UTC); PostgreSQL's driver decodes both itself."""
    found = dict(row)
    for name in json_columns:
        if isinstance(found.get(name), str):
            found[name] = json.loads(found[name])
    for name in times:
        if isinstance(found.get(name), str):
            found[name] = datetime.fromisoformat(found[name])
    return found


def _run_record(
    row: Mapping[str, Any], target: dict[str, Any] | None, summaries: list[dict[str, Any]]
) -> RunRecord:
    return RunRecord(
        id=row["id"], benchmark=row["benchmark"], metric=row["metric"], unit=row["unit"],
        direction=row["direction"], status=row["status"], params=row["params"] or {},
        request=row["request"] or {}, timer=row["timer"], overhead=row["overhead"],
        probe_header=row["probe_header"], sysinfo=row["sysinfo"], noise=row["noise"],
        warnings=list(row["warnings"] or []), tags=list(row["tags"] or []), error=row["error"],
        tool_output=row["tool_output"], n_samples=row["n_samples"], batch=row["batch"],
        started_at=row["started_at"], finished_at=row["finished_at"], target=target,
        summaries=summaries, commit=row.get("commit"), label=row.get("label"),
    )


DIGEST_LOOKUP_CHUNK = 500
"""Digests looked up per statement (SQLite allows 32,766 parameters, PostgreSQL 65,535)."""


def stored_digests(query: Query, digests: Collection[str]) -> dict[str, int]:
    """The runs stored with each of ``digests`` (``runs.import_digest``: an imported run's content
    digest), as digest -> run id; digests no run has are left out."""
    found: dict[str, int] = {}
    ordered = sorted(set(digests))
    for start in range(0, len(ordered), DIGEST_LOOKUP_CHUNK):
        chunk = ordered[start: start + DIGEST_LOOKUP_CHUNK]
        names = ", ".join(f":d{i}" for i in range(len(chunk)))
        rows = query(f"SELECT id, import_digest FROM runs WHERE import_digest IN ({names})",
                     {f"d{i}": digest for i, digest in enumerate(chunk)})
        found.update((str(row["import_digest"]), int(row["id"])) for row in rows)
    return found


def load_profile(query: Query, run_id: int) -> dict[str, Any] | None:
    """The run's profile row (``data`` still compressed), or None when it has none."""
    rows = query("SELECT * FROM profiles WHERE run_id = :id", {"id": run_id})
    if not rows:
        return None
    row = _decoded(rows[0], ("details",), ("created_at",))
    row["data"] = bytes(row["data"])
    return row


KERNEL_CONFIGS_SINCE = 10
"""The schema version that added ``kernel_configs``."""


def kernel_config(query: Query, digest: str) -> str | None:
    """The kernel ``.config`` stored under ``digest``, or None (not stored, or a database older
    than the table)."""
    if schema_version(query) < KERNEL_CONFIGS_SINCE:
        return None
    rows = query("SELECT codec, data FROM kernel_configs WHERE digest = :digest", {"digest": digest})
    if not rows:
        return None
    return zlib.decompress(bytes(rows[0]["data"])).decode("utf-8", "surrogateescape")


def profiled_runs(query: Query, run_ids: list[int]) -> set[int]:
    """Which of ``run_ids`` have a profile."""
    if not run_ids:
        return set()
    names = {f"id{i}": run_id for i, run_id in enumerate(run_ids)}
    rows = query(f"SELECT run_id FROM profiles WHERE run_id IN ({', '.join(':' + n for n in names)})", names)
    return {int(row["run_id"]) for row in rows}
