"""The rows a run is written as: the run itself, its sample columns, its summaries, and
the machine and target rows it points to. ``Store`` and the import of pending runs
(``store.pending``) write through these, inside the caller's transaction."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from kbench.store.errors import RunNotFound, StoreError
from kbench.store.owners import Owner, current_owner
from kbench.store.records import SummaryRecord

if TYPE_CHECKING:
    import numpy as np
    from sqlalchemy.engine import Connection

FINAL_STATUSES = ("complete", "interrupted", "failed", "abandoned")
"""What a run can end as (``running`` is the status while it is measured)."""

SUMMARY_COLUMNS = (
    "n", "min", "median", "p90", "p95", "p99", "max", "mean", "stdev", "mad", "steady_state_index",
)
BEGIN_FIELDS = (
    "benchmark", "metric", "unit", "direction", "params", "request", "sysinfo", "target", "tags", "commit", "label",
)
"""What ``Store.begin_run`` takes (a pending run's ``run`` mapping holds these)."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def run_row(
    conn: Connection, *, benchmark: str, metric: str, unit: str, direction: str, params: Mapping[str, Any],
    request: Mapping[str, Any], sysinfo: Mapping[str, Any] | None, target: Mapping[str, Any] | None,
    tags: Iterable[str] = (), commit: str | None = None, label: str | None = None, task_key: str | None = None,
    started_at: datetime, import_digest: str | None = None, owner: Owner | None = None,
) -> dict[str, Any]:
    """The values of a new ``running`` run owned by ``owner`` (this process by default; its
    machine and target rows are made first when they are new)."""
    owner = owner or current_owner()
    return {
        "benchmark": benchmark,
        "metric": metric,
        "unit": unit,
        "direction": direction,
        "status": "running",
        "params": dict(params),
        "request": dict(request),
        "sysinfo": dict(sysinfo) if sysinfo else None,
        "noise": dict(sysinfo.get("noise") or {}) if sysinfo else None,
        "tags": list(tags),
        "warnings": [],
        "machine_id": machine_id(conn, sysinfo) if sysinfo else None,
        "target_id": target_id(conn, target) if target else None,
        "n_samples": 0,
        "started_at": started_at,
        "commit": commit,
        "label": label,
        "task_key": task_key,
        "owner_pid": owner.pid,
        "owner_boot_id": owner.boot_id,
        "owner_host": owner.host,
        "import_digest": import_digest,
    }


def insert_run(conn: Connection, *, heartbeat_at: Any = None, **fields: Any) -> int:
    """Insert a ``running`` run (``run_row``'s arguments, and the first heartbeat of a run
    measured now); its id."""
    from sqlalchemy import insert

    from kbench.store import schema

    values = run_row(conn, **fields)
    if heartbeat_at is not None:
        values["heartbeat_at"] = heartbeat_at
    return inserted_id(conn.execute(insert(schema.runs).values(**values)))


def result_values(
    *,
    status: str,
    columns: Mapping[str, np.ndarray],
    probe_header: Mapping[str, Any] | None = None,
    warnings: Iterable[str] = (),
    error: str | None = None,
    tool_output: str | None = None,
) -> dict[str, Any]:
    """The values of a finished run's row (ValueError for a status that is not final or
    columns of different lengths)."""
    if status not in FINAL_STATUSES:
        raise ValueError(f"invalid final run status {status!r}")
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"sample columns differ in length: {lengths}")
    header = dict(probe_header or {})
    return {
        "status": status,
        "n_samples": next(iter(lengths.values()), 0),
        "probe_header": header or None,
        "timer": header.get("timer"),
        "overhead": header.get("overhead"),
        "batch": header.get("batch"),
        "warnings": list(warnings),
        "error": error,
        "tool_output": tool_output,
        "finished_at": utcnow(),
    }


def sample_rows(run_id: int, columns: Mapping[str, np.ndarray]) -> list[dict[str, Any]]:
    import numpy as np

    from kbench.store.codec import CODEC, encode_array

    rows = []
    for name, values in columns.items():
        dtype, blob = encode_array(np.ascontiguousarray(values))
        rows.append({"run_id": run_id, "column": name, "dtype": dtype, "codec": CODEC, "count": len(values),
                     "data": blob})
    return rows


def summary_rows(run_id: int, summaries: Iterable[SummaryRecord]) -> list[dict[str, Any]]:
    return [
        {"run_id": run_id, "metric": summary.metric, "unit": summary.unit, "basis": summary.basis,
         "details": dict(summary.details), **{key: summary.values[key] for key in SUMMARY_COLUMNS}}
        for summary in summaries
    ]


def insert_samples_and_summaries(conn: Connection, samples: list[dict[str, Any]],
                                 summaries: list[dict[str, Any]]) -> None:
    from sqlalchemy import insert

    from kbench.store import schema

    if samples:
        conn.execute(insert(schema.samples), samples)
    if summaries:
        conn.execute(insert(schema.summaries), summaries)


def write_result(
    conn: Connection,
    run_id: int,
    *,
    status: str,
    columns: Mapping[str, np.ndarray] | None = None,
    probe_header: Mapping[str, Any] | None = None,
    summaries: Iterable[SummaryRecord] = (),
    warnings: Iterable[str] = (),
    error: str | None = None,
    tool_output: str | None = None,
    import_digest: str | None = None,
) -> None:
    """A run's samples, summaries and final status (``import_digest`` too when given)."""
    from sqlalchemy import update

    from kbench.store import schema

    columns = dict(columns or {})
    values = result_values(status=status, columns=columns, probe_header=probe_header, warnings=warnings,
                           error=error, tool_output=tool_output)
    if import_digest is not None:
        values["import_digest"] = import_digest
    insert_samples_and_summaries(conn, sample_rows(run_id, columns), summary_rows(run_id, summaries))
    updated = conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(**values))
    if updated.rowcount != 1:
        raise RunNotFound(f"no run with id {run_id}")


def inserted_id(result: Any) -> int:
    key = result.inserted_primary_key
    if key is None:
        raise StoreError("the database did not return the id of a new row")
    return int(key[0])


def machine_id(conn: Connection, sysinfo: Mapping[str, Any]) -> int:
    """The id of the machine ``sysinfo`` describes, recorded now if it is new (once, however many
    writers record it at the same moment: ``store/once.py``)."""
    from sqlalchemy import select

    from kbench.store import schema
    from kbench.store.once import insert_or_ignore
    from kbench.sysinfo.collect import machine_facts, machine_fingerprint

    fingerprint = machine_fingerprint(dict(sysinfo))
    query = select(schema.machines.c.id).where(schema.machines.c.fingerprint == fingerprint)
    existing = conn.execute(query).scalar()
    if existing is not None:
        return int(existing)
    insert_or_ignore(conn, schema.machines, {"fingerprint": fingerprint, **machine_facts(dict(sysinfo)),
                                             "first_seen": utcnow()}, unique=["fingerprint"])
    return int(conn.execute(query).scalar_one())  # this writer's row, or the one another inserted first


def target_id(conn: Connection, target: Mapping[str, Any]) -> int:
    """The id of the target row for ``target``, recorded now if it is new."""
    from sqlalchemy import insert, select, update

    from kbench.store import schema
    from kbench.store.once import lock_for_insert

    t = schema.targets.c
    lock_for_insert(conn, schema.targets)  # its key's nullable columns escape UNIQUE (store/once.py)
    key = {
        "kind": target["kind"],
        "kernel_release": target["kernel_release"],
        "kernel_version": target["kernel_version"],
        "accel": target.get("accel"),
        "build_id": target.get("build_id"),
    }
    query = select(t.id)
    for name, value in key.items():
        column = getattr(t, name)
        query = query.where(column.is_(None) if value is None else column == value)
    config = target.get("kernel_config")
    digest = store_kernel_config(conn, config) if isinstance(config, str) else None
    existing = conn.execute(query.add_columns(t.config_digest)).first()
    if existing is not None:
        if digest is not None and existing[1] is None:  # stored before kbench read kernels' configs
            conn.execute(update(schema.targets).where(t.id == existing[0]).values(config_digest=digest))
        return int(existing[0])
    result = conn.execute(
        insert(schema.targets).values(**key, details=dict(target.get("details") or {}), config_digest=digest)
    )
    return inserted_id(result)


def store_kernel_config(conn: Connection, text: str) -> str:
    """Store a kernel's ``.config`` once under its digest (zlib-compressed); the digest."""
    from sqlalchemy import insert, select
    from sqlalchemy.exc import IntegrityError

    from kbench.contract.kernel_config import config_digest
    from kbench.store import schema

    digest = config_digest(text)
    table = schema.kernel_configs
    if conn.execute(select(table.c.digest).where(table.c.digest == digest)).first() is None:
        data = text.encode("utf-8", "surrogateescape")
        try:
            with conn.begin_nested():  # another kbench (a fleet worker) may store the same config meanwhile
                conn.execute(insert(table).values(digest=digest, codec="zlib", size=len(data),
                                                  data=zlib.compress(data, 6), stored_at=utcnow()))
        except IntegrityError:
            pass
    return digest
