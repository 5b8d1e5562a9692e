"""Export a stored run: one writer per format behind one function."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from kbench.contract.formats import SUITE_FORMAT
from kbench.contract.json_document import document, utc_timestamp
from kbench.engine.stored_run import StoredRun

FORMATS = ("json", "csv", "parquet")


def _metadata(view: StoredRun) -> dict[str, Any]:
    record = view.record
    return {
        "run_id": record.id,
        "benchmark": record.benchmark,
        "metric": record.metric,
        "unit": record.unit,
        "direction": record.direction,
        "status": record.status,
        "basis": view.basis,
        "params": record.params,
        "request": record.request,
        "probe_header": record.probe_header,
        "target": record.target,
        "sysinfo": record.sysinfo,
        "warnings": record.warnings,
        "started_at": utc_timestamp(record.started_at) if record.started_at else None,
        "finished_at": utc_timestamp(record.finished_at) if record.finished_at else None,
        "summaries": [
            {k: v for k, v in s.items() if k != "run_id"} for s in record.summaries
        ],
    }


def _sample_columns(view: StoredRun) -> dict[str, np.ndarray]:
    columns = dict(view.measurement.columns)
    if view.measurement.header.get("format") != SUITE_FORMAT:
        columns[f"value_{view.record.unit}_per_op"] = view.values
    return columns


def export_json(view: StoredRun) -> bytes:
    data = _metadata(view)
    data["samples"] = {name: values.tolist() for name, values in _sample_columns(view).items()}
    return json.dumps(document(data), indent=1, default=str).encode()


def export_csv(view: StoredRun) -> bytes:
    columns = _sample_columns(view)
    names = list(columns)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["index", *names])
    arrays = [columns[name] for name in names]
    for i in range(view.measurement.n):
        writer.writerow([i, *(_csv_value(a[i]) for a in arrays)])
    return out.getvalue().encode()


def _csv_value(value: Any) -> str:
    return repr(float(value)) if isinstance(value, np.floating) else str(int(value))


def export_parquet(view: StoredRun) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        from kbench.report.interop.tidy import parquet_missing

        raise parquet_missing() from None

    table = pa.table({name: values for name, values in _sample_columns(view).items()})
    table = table.replace_schema_metadata(
        {"kbench": json.dumps(document(_metadata(view)), default=str)}
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


WRITERS: dict[str, Callable[[StoredRun], bytes]] = {
    "json": export_json,
    "csv": export_csv,
    "parquet": export_parquet,
}


def export_run(view: StoredRun, fmt: str, destination: Path | None) -> bytes:
    """Render ``view`` as ``fmt``; write it to ``destination`` if given, and return it."""
    if fmt not in WRITERS:
        raise ValueError(f"unknown export format {fmt!r}; choose one of {', '.join(FORMATS)}")
    data = WRITERS[fmt](view)
    if destination is not None:
        destination.write_bytes(data)
    return data
