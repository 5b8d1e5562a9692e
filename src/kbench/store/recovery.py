"""Recovery files: a measured run the database could not take, kept whole on disk.

When storing a finished run fails (disk full, database gone read-only, server lost),
its samples are not thrown away: ``save_recovery`` writes everything the store would
have written to a JSON file (samples compressed as the store compresses them), and the
error names that file. ``kbench import FILE`` puts the run into a database later (``importers.recovery`` reads
the file back, checking every field).

Format ``kbench-recovery/1``::

    {"format": "kbench-recovery/1", "written_at": ISO time, "reason": why it was not stored,
     "database": where it should have gone, "run_id": its id there (or null),
     "run": {benchmark, metric, unit, direction, params, request, sysinfo, target, tags,
             started_at},
     "result": {status, probe_header, warnings, error, tool_output,
                summaries: [{metric, unit, basis, values, details}],
                columns: {NAME: {dtype, codec, count, data (base64)}}}}
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from kbench.store.codec import CODEC, encode_array
from kbench.store.errors import StoreError
from kbench.store.records import SummaryRecord

RECOVERY_FORMAT = "kbench-recovery/1"
RECOVERY_DIR_ENV = "KBENCH_RECOVERY_DIR"
SUFFIX = ".kbench-recovery.json"


class SamplesNotStored(StoreError):
    """The database failed after a run was measured; the run went to a recovery file."""

    def __init__(self, reason: str, path: Path | None, n_samples: int, where_tried: str = ""):
        self.reason = reason
        self.path = path
        if path is not None:
            message = (f"{reason}; the run's {n_samples} samples were saved in {path}: "
                       f"`kbench import {path}` stores them once the database works again")
        else:
            message = f"{reason}; the run's {n_samples} samples could not be saved anywhere either ({where_tried})"
        super().__init__(message)


@dataclass(frozen=True)
class PendingRun:
    """A measured run waiting to be stored: what ``begin_run`` (``run``) and ``finish_run``
    (the rest) take. Read from a recovery file, or made by another importer."""

    run: dict[str, Any]
    status: str
    columns: dict[str, np.ndarray]
    probe_header: dict[str, Any]
    summaries: Sequence[SummaryRecord]
    warnings: list[str]
    error: str | None
    tool_output: str | None
    run_id: int | None = None
    database: str = ""
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    digest: str | None = None
    """What identifies the run's content (``content_digest`` of what its file says about it):
    stored with it, so that the same content is stored once however its file is named or dated."""

    @property
    def started_at(self) -> datetime | None:
        text = self.run.get("started_at")
        return datetime.fromisoformat(text) if text else None


def content_digest(*parts: Any) -> str:
    """The SHA-256 (hex) of ``parts`` written as canonical JSON (sorted keys, no blanks):
    equal for equal content, whatever the order of keys or the spacing of the file."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def recovery_dirs() -> list[Path]:
    """Where a recovery file may go, in order: $KBENCH_RECOVERY_DIR,
    $XDG_STATE_HOME/kbench/recovery (~/.local/state/...), the temporary directory, the
    current directory. The database's own file system is often the full one."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    dirs = [Path(state) / "kbench" / "recovery", Path(tempfile.gettempdir()), Path.cwd()]
    override = os.environ.get(RECOVERY_DIR_ENV)
    return [Path(override), *dirs] if override else dirs


def save_recovery(
    *,
    reason: str,
    database: str,
    run_id: int | None,
    run: Mapping[str, Any],
    status: str,
    columns: Mapping[str, np.ndarray],
    probe_header: Mapping[str, Any] | None,
    summaries: list[SummaryRecord],
    warnings: list[str],
    error: str | None,
    tool_output: str | None,
) -> SamplesNotStored:
    """Write the run to the first recovery directory that takes it; the error to raise."""
    n_samples = len(next(iter(columns.values()))) if columns else 0
    document = {
        "format": RECOVERY_FORMAT,
        "written_at": datetime.now(UTC).isoformat(),
        "reason": reason,
        "database": database,
        "run_id": run_id,
        "run": _jsonable(dict(run)),
        "result": {
            "status": status,
            "probe_header": _jsonable(dict(probe_header or {})),
            "warnings": list(warnings),
            "error": error,
            "tool_output": tool_output,
            "summaries": [_jsonable(asdict(summary)) for summary in summaries],
            "columns": {name: _encode(values) for name, values in columns.items()},
        },
    }
    text = json.dumps(document, default=str)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    name = f"run-{run_id if run_id is not None else 'new'}-{stamp}-{os.getpid()}{SUFFIX}"
    failures = []
    for directory in recovery_dirs():
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / name
            partial = path.with_name(path.name + ".part")
            partial.write_text(text)
            partial.replace(path)
        except OSError as exc:
            failures.append(f"{directory}: {exc.strerror or exc}")
            continue
        return SamplesNotStored(reason, path.resolve(), n_samples)
    return SamplesNotStored(reason, None, n_samples, "; ".join(failures))


def _encode(values: np.ndarray) -> dict[str, Any]:
    dtype, blob = encode_array(np.ascontiguousarray(values))
    return {"dtype": dtype, "codec": CODEC, "count": len(values), "data": base64.b64encode(blob).decode()}


def _jsonable(value: Any) -> Any:
    """Plain JSON values (numpy scalars and arrays, datetimes and tuples converted)."""
    return json.loads(json.dumps(value, default=_plain))


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)
