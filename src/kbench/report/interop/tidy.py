"""A tidy table of runs: one row per run, its parameters and the summaries stored with it.

Columns, in order: ``run_id``, ``benchmark``, ``metric``, ``unit``, ``direction``, ``status``,
``started_at``, ``finished_at`` (ISO 8601, UTC), ``target_kind``, ``kernel_release``,
``accel``, ``host``, ``tags`` (``;``-separated), ``n_samples``; then ``param.<name>`` for
every parameter of any run (empty where a run has none); then the primary metric's summary
``n``, ``min``, ``median``, ``mean``, ``stdev``, ``mad``, ``p90``, ``p95``, ``p99``, ``max``;
then ``<metric>.median`` for every other metric a run summarised (a suite's secondary
metrics). With the sides of a comparison (``--runs A --runs B``) a first column ``side``
(``runs 1,2``) says which side a run belongs to. Written as CSV, as Parquet (pyarrow,
imported only here) or as a JSON list.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from kbench.extras import ExtraMissing
from kbench.report.interop.common import ExportProblem
from kbench.store.db import RunRecord

SUMMARY = ("n", "min", "median", "mean", "stdev", "mad", "p90", "p95", "p99", "max")


def parquet_missing() -> ExtraMissing:
    """The error of a Parquet export without pyarrow (exit 16, naming the extra)."""
    return ExtraMissing("parquet", "kbench export --format parquet", "pyarrow", hint="or export --format csv")


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)).isoformat()


def rows(
    records: Sequence[RunRecord], sides: Sequence[str] | None = None
) -> tuple[list[str], list[dict[str, Any]]]:
    """(columns, rows) of the table for ``records``, in the order given; ``sides``: each
    record's side label, for a ``side`` column."""
    params: list[str] = []
    others: list[str] = []
    table = []
    for record in records:
        target = record.target or {}
        row: dict[str, Any] = {
            "run_id": record.id, "benchmark": record.benchmark, "metric": record.metric, "unit": record.unit,
            "direction": record.direction, "status": record.status, "started_at": _iso(record.started_at),
            "finished_at": _iso(record.finished_at), "target_kind": target.get("kind"),
            "kernel_release": target.get("kernel_release"), "accel": target.get("accel"),
            "host": (record.sysinfo or {}).get("hostname"), "tags": ";".join(record.tags or []),
            "n_samples": record.n_samples,
        }
        for name, value in (record.params or {}).items():
            key = f"param.{name}"
            params += [key] if key not in params else []
            row[key] = str(value)
        for summary in record.summaries:
            if summary.get("metric") == record.metric:
                row.update({stat: summary.get(stat) for stat in SUMMARY})
            else:
                key = f"{summary.get('metric')}.median"
                others += [key] if key not in others else []
                row[key] = summary.get("median")
        table.append(row)
    base = ["run_id", "benchmark", "metric", "unit", "direction", "status", "started_at", "finished_at",
            "target_kind", "kernel_release", "accel", "host", "tags", "n_samples"]
    if sides is not None:
        base.insert(0, "side")
        for row, side in zip(table, sides, strict=True):
            row["side"] = side
    columns = [*base, *params, *SUMMARY, *others]
    return columns, [{column: row.get(column) for column in columns} for row in table]


def write(fmt: str, records: Sequence[RunRecord], sides: Sequence[str] | None = None) -> bytes:
    columns, table = rows(records, sides)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: ("" if v is None else _csv(v)) for k, v in row.items()} for row in table)
        return out.getvalue().encode()
    if fmt == "json":
        return (json.dumps(table, indent=1) + "\n").encode()
    if fmt == "parquet":
        return _parquet(columns, table)
    raise ExportProblem(f"unknown table format {fmt!r}; choose csv, parquet or json")


def _csv(value: Any) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _parquet(columns: list[str], table: list[dict[str, Any]]) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise parquet_missing() from None
    numeric = {"run_id", "n_samples", *SUMMARY} | {c for c in columns if c.endswith(".median")}
    arrays = {}
    for column in columns:
        values = [row[column] for row in table]
        if column in numeric:
            kind = pa.int64() if column in ("run_id", "n_samples", "n") else pa.float64()
            arrays[column] = pa.array(values, type=kind)
        else:
            arrays[column] = pa.array([None if v is None else str(v) for v in values], type=pa.string())
    sink = io.BytesIO()
    pq.write_table(pa.table(arrays), sink)
    return sink.getvalue()
