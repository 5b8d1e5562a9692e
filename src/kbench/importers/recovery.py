"""Reading a kbench recovery file back (``kbench-recovery/1``, written by ``store.recovery``).

The file may have been damaged, cut or edited since kbench wrote it: every field is
checked for its type and size (``RecoveryFile``) before anything is stored, the sample
columns are inflated only up to the size their counts promise, and a problem is one line
naming the file and the field.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, Strict, StrictStr, StringConstraints, model_validator

from kbench.contract.kernel_config import CONFIG_LIMIT
from kbench.contract.vocabulary import Direction
from kbench.importers.common import NonNegativeInt64, validated_json
from kbench.store.codec import CODEC
from kbench.store.records import SummaryRecord
from kbench.store.recovery import RECOVERY_FORMAT, PendingRun, content_digest

MAX_SAMPLE_BYTES = 4 << 30
"""Most bytes a recovery file's sample columns may inflate to, all together (5 × 10⁸
64-bit samples: more than any run kbench's limits allow)."""

_PRINTABLE = r"^[^\x00-\x1f\x7f]*$"
"""Names and units hold no control characters (PostgreSQL refuses NUL in text)."""
Name = Annotated[str, Strict(), StringConstraints(min_length=1, max_length=255, pattern=_PRINTABLE)]
Short = Annotated[str, Strict(), StringConstraints(min_length=1, max_length=32, pattern=_PRINTABLE)]
Kind = Annotated[str, Strict(), StringConstraints(min_length=1, max_length=16, pattern=_PRINTABLE)]
"""The database columns' sizes (``store.schema``)."""
Batch = Annotated[int, Strict(), Field(ge=0, le=2**31 - 1)]
"""``runs.batch`` is a 32-bit column on PostgreSQL."""
SummaryNumber = Annotated[float, Strict()]
"""A summary figure: NaN is what a summary of one value has for its spread."""


class _Checked(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Open(BaseModel):
    """A mapping whose other keys are kept as they are."""

    model_config = ConfigDict(extra="allow", frozen=True)


class RecoveryCpu(_Open):
    model: StrictStr | None = None
    count: NonNegativeInt64 | None = None


class RecoverySysinfo(_Open):
    hostname: StrictStr | None = None
    cpu: RecoveryCpu = Field(default_factory=RecoveryCpu)
    memory_bytes: NonNegativeInt64 | None = None
    noise: dict[str, Any] = Field(default_factory=dict)


class RecoveryTarget(_Open):
    kind: Kind
    kernel_release: StrictStr = Field(max_length=255)
    kernel_version: StrictStr = Field(max_length=512)
    accel: Kind | None = None
    build_id: StrictStr | None = Field(default=None, max_length=128)
    details: dict[str, Any] | None = None
    kernel_config: StrictStr | None = Field(default=None, max_length=CONFIG_LIMIT)


class RecoveryRun(_Open):
    """What ``Store.begin_run`` takes."""

    benchmark: Name
    metric: Name
    unit: Short
    direction: Direction
    params: dict[str, Any] = Field(default_factory=dict)
    request: dict[str, Any] = Field(default_factory=dict)
    sysinfo: RecoverySysinfo | None = None
    target: RecoveryTarget | None = None
    tags: list[StrictStr] = Field(default_factory=list)
    started_at: datetime
    commit: StrictStr | None = Field(default=None, max_length=64)
    label: StrictStr | None = Field(default=None, max_length=255)


class SummaryValues(_Open):
    n: NonNegativeInt64
    min: SummaryNumber
    median: SummaryNumber
    p90: SummaryNumber
    p95: SummaryNumber
    p99: SummaryNumber
    max: SummaryNumber
    mean: SummaryNumber
    stdev: SummaryNumber
    mad: SummaryNumber
    steady_state_index: NonNegativeInt64


class RecoverySummary(_Checked):
    metric: Name
    unit: Short
    basis: Short
    values: SummaryValues
    details: dict[str, Any] = Field(default_factory=dict)


class RecoveryColumn(_Checked):
    dtype: Annotated[str, Strict(), StringConstraints(pattern=r"^(<[uif][248]|\|[uib]1)$")]
    codec: Literal["zlib"]
    count: NonNegativeInt64
    data: StrictStr
    """base64 of the zlib-compressed little-endian values."""

    @property
    def size(self) -> int:
        return self.count * np.dtype(self.dtype).itemsize


class ProbeHeader(_Open):
    timer: dict[str, Any] | None = None
    overhead: dict[str, Any] | None = None
    batch: Batch | None = None


class RecoveryResult(_Checked):
    status: Literal["complete", "interrupted", "failed", "abandoned"]
    probe_header: ProbeHeader | None = None
    warnings: list[StrictStr] = Field(default_factory=list)
    error: StrictStr | None = None
    tool_output: StrictStr | None = None
    summaries: list[RecoverySummary] = Field(default_factory=list)
    columns: dict[Short, RecoveryColumn]

    @model_validator(mode="after")
    def _columns_agree(self) -> RecoveryResult:
        counts = {name: column.count for name, column in self.columns.items()}
        if len(set(counts.values())) > 1:
            raise ValueError(f"the columns hold different numbers of samples: {counts}")
        total = sum(column.size for column in self.columns.values())
        if total > MAX_SAMPLE_BYTES:
            raise ValueError(f"the columns would hold {total:,} bytes of samples, more than the "
                             f"{MAX_SAMPLE_BYTES:,} a recovery file may")
        return self


class RecoveryFile(_Open):
    format: Literal["kbench-recovery/1"]
    written_at: StrictStr | None = None
    reason: StrictStr = ""
    database: StrictStr = ""
    run_id: Annotated[int, Strict(), Field(ge=1, le=2**63 - 1)] | None = None
    run: RecoveryRun
    result: RecoveryResult


def looks_like_recovery(head: bytes) -> bool:
    return b'"format"' in head[:200] and RECOVERY_FORMAT.encode() in head[:200]


def load_recovery(path: Path, data: bytes) -> list[PendingRun]:
    """The run in a recovery file (ValueError naming the file and what is wrong with it)."""
    document = validated_json(RecoveryFile, data, path, "recovery file")
    result = document.result
    columns = {name: _decoded(path, name, column) for name, column in result.columns.items()}
    run = document.run.model_dump(mode="json")
    for part in ("sysinfo", "target"):  # as the file has them (the store reads their keys)
        given = getattr(document.run, part)
        run[part] = given.model_dump(mode="json", exclude_unset=True) if given is not None else None
    started = document.run.started_at
    run["started_at"] = (started.replace(tzinfo=UTC) if started.tzinfo is None else started).isoformat()
    digest = content_digest("recovery", document.run_id, document.run.model_dump(mode="json", exclude_unset=True),
                            result.model_dump(mode="json", exclude_unset=True))
    return [PendingRun(
        run=run,
        status=result.status,
        columns=columns,
        probe_header=result.probe_header.model_dump(mode="json", exclude_unset=True) if result.probe_header else {},
        summaries=[SummaryRecord(metric=s.metric, unit=s.unit, basis=s.basis, values=s.values.model_dump(),
                                 details=s.details) for s in result.summaries],
        warnings=list(result.warnings),
        error=result.error,
        tool_output=result.tool_output,
        run_id=document.run_id,
        database=document.database,
        reason=document.reason,
        digest=digest,
    )]


def _decoded(path: Path, name: str, column: RecoveryColumn) -> np.ndarray:
    """A column's values; its data is inflated no further than its count promises."""
    where = f"{path}: damaged recovery file: result.columns.{name}"
    if column.codec != CODEC:
        raise ValueError(f"{where}: unknown sample codec {column.codec!r}")
    try:
        blob = base64.b64decode(column.data, validate=True)
        inflater = zlib.decompressobj()
        raw = inflater.decompress(blob, column.size + 1)
    except (binascii.Error, zlib.error) as exc:
        raise ValueError(f"{where}: damaged sample data ({exc})") from exc
    if len(raw) != column.size or not inflater.eof:
        raise ValueError(f"{where}: its data does not hold the {column.count} values of {column.dtype} "
                         "its count says")
    return np.frombuffer(raw, dtype=np.dtype(column.dtype))
