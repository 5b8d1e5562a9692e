"""Storing runs measured earlier (``kbench import``: recovery files, other tools' files),
each once, many at a time.

A run is recognised by its content digest (``PendingRun.digest``, kept in
``runs.import_digest``, unique): a second import of the same content finds it, whatever
its file is called or dated. Runs stored before digests existed (schema < 6) are
recognised as before, by benchmark, parameters, start (within 1 ms), sample count and
status. The runs of one call are written with a few statements in all (bulk inserts), so
that a file of 20,000 entries takes seconds, not minutes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kbench.store import reads
from kbench.store.owners import current_owner
from kbench.store.writes import (
    BEGIN_FIELDS,
    insert_samples_and_summaries,
    inserted_id,
    machine_id,
    result_values,
    run_row,
    sample_rows,
    summary_rows,
    target_id,
    utcnow,
    write_result,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection

    from kbench.store.recovery import PendingRun

WAITING_STATUSES = ("running", "abandoned", "failed")
"""A run in one of these with no samples is still waiting for the samples a recovery file holds."""


def store_pending_runs(conn: Connection, pending_runs: Sequence[PendingRun]) -> list[tuple[int, str]]:
    """(run id, ``exists`` | ``completed`` | ``added``) for each run, in ``conn``'s
    transaction (see ``Store.store_pending_runs``)."""
    outcome: list[tuple[int, str] | None] = [None] * len(pending_runs)
    stored = _stored_digests(conn, {p.digest for p in pending_runs if p.digest is not None})
    legacy = _LegacyRuns(conn)
    new: list[int] = []
    first_with_digest: dict[str, int] = {}
    repeats: dict[int, int] = {}
    for index, pending in enumerate(pending_runs):
        digest = pending.digest
        if digest is not None and digest in stored:
            outcome[index] = (stored[digest], "exists")
        elif digest is not None and digest in first_with_digest:  # twice in this call: stored once
            repeats[index] = first_with_digest[digest]
        elif (earlier := legacy.find(pending)) is not None:
            outcome[index] = (earlier, "exists")
        elif (waiting := _waiting_run(conn, pending)) is not None:
            _complete(conn, waiting, pending)
            outcome[index] = (waiting, "completed")
            if digest is not None:
                stored[digest] = waiting
        else:
            new.append(index)
            if digest is not None:
                first_with_digest[digest] = index
    for index, run_id in zip(new, _insert_finished(conn, [pending_runs[i] for i in new]), strict=True):
        outcome[index] = (run_id, "added")
    for index, first in repeats.items():
        run_id, _ = outcome[first] or (0, "")
        outcome[index] = (run_id, "exists")
    return [found for found in outcome if found is not None]


def _stored_digests(conn: Connection, digests: set[str]) -> dict[str, int]:
    from sqlalchemy import text

    def query(sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [dict(row) for row in conn.execute(text(sql), dict(params)).mappings()]

    return reads.stored_digests(query, digests)


class _LegacyRuns:
    """Runs stored without a digest, looked up once per (benchmark, sample count, status)."""

    def __init__(self, conn: Connection):
        self._conn = conn
        self._seen: dict[tuple[str, int, str], list[tuple[int, str, datetime]]] = {}

    def find(self, pending: PendingRun) -> int | None:
        started_at = pending.started_at
        if started_at is None:
            return None
        key = (str(pending.run.get("benchmark")), _n_samples(pending), pending.status)
        if key not in self._seen:
            self._seen[key] = self._load(*key)
        params = _canonical(pending.run.get("params"))
        for run_id, stored_params, stored_start in self._seen[key]:
            if stored_params == params and _same_time(stored_start, started_at):
                return run_id
        return None

    def _load(self, benchmark: str, n_samples: int, status: str) -> list[tuple[int, str, datetime]]:
        from sqlalchemy import select

        from kbench.store import schema

        r = schema.runs.c
        rows = self._conn.execute(
            select(r.id, r.params, r.started_at).where(
                (r.benchmark == benchmark) & r.import_digest.is_(None) & (r.n_samples == n_samples)
                & (r.status == status)
            )
        )
        return [(int(row.id), _canonical(row.params), row.started_at) for row in rows]


def _waiting_run(conn: Connection, pending: PendingRun) -> int | None:
    """The run a recovery file was written for, if it is in this database and still waits
    for its samples (same benchmark and start, no samples)."""
    from sqlalchemy import select

    from kbench.store import schema

    started_at = pending.started_at
    if pending.run_id is None or started_at is None:
        return None
    r = schema.runs.c
    row = conn.execute(
        select(r.id, r.benchmark, r.status, r.n_samples, r.started_at).where(r.id == pending.run_id)
    ).first()
    if (row is not None and row.benchmark == pending.run.get("benchmark") and _same_time(row.started_at, started_at)
            and row.status in WAITING_STATUSES and row.n_samples == 0):
        return int(row.id)
    return None


def _complete(conn: Connection, run_id: int, pending: PendingRun) -> None:
    write_result(
        conn, run_id, status=pending.status, columns=pending.columns, probe_header=pending.probe_header,
        summaries=pending.summaries, warnings=pending.warnings, error=pending.error,
        tool_output=pending.tool_output, import_digest=pending.digest,
    )


def _insert_finished(conn: Connection, pending_runs: Sequence[PendingRun]) -> list[int]:
    """Insert finished runs with their samples and summaries; their ids, in order."""
    if not pending_runs:
        return []
    ids = _RowIds(conn)
    owner = current_owner()
    rows = []
    for pending in pending_runs:
        fields: dict[str, Any] = {key: pending.run.get(key) for key in BEGIN_FIELDS}
        sysinfo, target = fields.pop("sysinfo"), fields.pop("target")
        row = run_row(conn, **fields, sysinfo=None, target=None, started_at=pending.started_at or utcnow(),
                      import_digest=pending.digest, owner=owner)
        if sysinfo:
            row.update(sysinfo=dict(sysinfo), noise=dict(sysinfo.get("noise") or {}), machine_id=ids.machine(sysinfo))
        if target:
            row["target_id"] = ids.target(target)
        row.update(result_values(status=pending.status, columns=pending.columns, probe_header=pending.probe_header,
                                 warnings=pending.warnings, error=pending.error, tool_output=pending.tool_output))
        rows.append(row)
    run_ids = _insert_rows(conn, rows)
    samples = [row for run_id, p in zip(run_ids, pending_runs, strict=True) for row in sample_rows(run_id, p.columns)]
    summaries = [row for run_id, p in zip(run_ids, pending_runs, strict=True)
                 for row in summary_rows(run_id, p.summaries)]
    insert_samples_and_summaries(conn, samples, summaries)
    return run_ids


def _insert_rows(conn: Connection, rows: list[dict[str, Any]]) -> list[int]:
    """Insert run rows; their ids in order. Rows that all carry a digest (distinct: the
    caller stores each content once) go in a few multi-row statements, whose ids are
    matched back by digest (SQLite does not return them in the order of the rows)."""
    from sqlalchemy import insert

    from kbench.store import schema

    r = schema.runs.c
    digests = [row["import_digest"] for row in rows]
    if None in digests or len(set(digests)) != len(digests):
        return [inserted_id(conn.execute(insert(schema.runs).values(**row))) for row in rows]
    returned = conn.execute(insert(schema.runs).returning(r.id, r.import_digest), rows)
    ids = {str(row.import_digest): int(row.id) for row in returned}
    return [ids[digest] for digest in digests]


class _RowIds:
    """Machine and target ids, each looked up (or recorded) once per call."""

    def __init__(self, conn: Connection):
        self._conn = conn
        self._machines: dict[str, int] = {}
        self._targets: dict[str, int] = {}

    def machine(self, sysinfo: Any) -> int:
        key = _canonical(sysinfo)
        if key not in self._machines:
            self._machines[key] = machine_id(self._conn, sysinfo)
        return self._machines[key]

    def target(self, target: Any) -> int:
        key = _canonical(target)
        if key not in self._targets:
            self._targets[key] = target_id(self._conn, target)
        return self._targets[key]


def _n_samples(pending: PendingRun) -> int:
    return len(next(iter(pending.columns.values()))) if pending.columns else 0


def _canonical(value: Any) -> str:
    return json.dumps(value or {}, sort_keys=True, default=str)


def _same_time(stored: datetime, other: datetime) -> bool:
    if stored.tzinfo is None:
        stored = stored.replace(tzinfo=UTC)
    if other.tzinfo is None:
        other = other.replace(tzinfo=UTC)
    return abs((stored - other).total_seconds()) < 1e-3
