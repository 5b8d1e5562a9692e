"""hyperfine's ``--export-json`` files: one run per command, every execution's wall time.

A file is ``{"results": [{"command", "mean", "stddev", "median", "user", "system", "min",
"max", "times": [s...], "exit_codes": [...], "parameters": {NAME: VALUE}?,
"memory_usage_byte": [...]?}]}``. Each result becomes a run of ``hyperfine.command``:
parameters ``command`` plus hyperfine's own ``--parameter-*`` values, metric
``hyperfine.command.time`` in seconds (one sample per execution, in order), the exit
codes as a column, the peak memory as a second metric when hyperfine measured it, and
``user``/``system`` (hyperfine keeps only their means) in the header. Each execution is a
fresh process: column ``trial`` numbers them, and ``kbench compare`` takes each as a trial. All commands share
one metric, so ``kbench compare --runs A --runs B`` compares two commands of a file.

Every field kbench reads is checked for its type first (``HyperfineResult``): a file with
``exit_codes: [1e30]`` or ``times: [true]`` is refused, naming the file and the field.
hyperfine records no time: a run starts at the file's modification time, 10 ms apart per
result. A run is identified by a digest of its entry (position and content), so a second
import of the file is a no-op and two files with the same modification time are two runs.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from pydantic import Field, StrictStr, model_validator

from kbench.importers.common import (
    FiniteNumber,
    ImportedFile,
    ImportedMetric,
    Int64,
    JsonScalar,
    NonNegativeInt64,
    Seconds,
    imported_run,
    validated_json,
)
from kbench.store.recovery import PendingRun, content_digest

TOOL = "hyperfine"
BENCHMARK = "hyperfine.command"
TIME_METRIC = "hyperfine.command.time"
MEMORY_METRIC = "hyperfine.command.memory"
KEPT = ("mean", "stddev", "median", "user", "system", "min", "max")
"""The per-command figures hyperfine computed, kept in the header as it wrote them."""


class HyperfineResult(ImportedFile):
    """One command's entry of ``--export-json``: what kbench reads of it, with its type."""

    command: StrictStr
    times: list[Seconds] = Field(min_length=1)
    exit_codes: list[Int64 | None] | None = None
    memory_usage_byte: list[NonNegativeInt64] | None = None
    parameters: dict[str, JsonScalar] | None = None
    mean: FiniteNumber | None = None
    stddev: FiniteNumber | None = None
    median: FiniteNumber | None = None
    user: FiniteNumber | None = None
    system: FiniteNumber | None = None
    min: FiniteNumber | None = None
    max: FiniteNumber | None = None

    @model_validator(mode="after")
    def _one_value_per_execution(self) -> HyperfineResult:
        for name in ("exit_codes", "memory_usage_byte"):
            values = getattr(self, name)
            if values is not None and len(values) != len(self.times):
                raise ValueError(f"{name} has {len(values)} values for {len(self.times)} times "
                                 "(one per execution expected)")
        return self


class HyperfineFile(ImportedFile):
    results: list[HyperfineResult] = Field(min_length=1)


def looks_like_hyperfine(head: bytes) -> bool:
    text = head.lstrip()
    return text.startswith(b"{") and b'"results"' in text[:64] and b'"command"' in text


def load_hyperfine(path: Path, data: bytes) -> list[PendingRun]:
    document = validated_json(HyperfineFile, data, path, "hyperfine file")
    mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return [_run(path, index, result, mtime + timedelta(milliseconds=10 * index))
            for index, result in enumerate(document.results)]


def _run(path: Path, index: int, result: HyperfineResult, started_at: datetime) -> PendingRun:
    parameters = result.parameters or {}
    params = {"command": result.command, **{str(k): str(v) for k, v in parameters.items()}}
    metrics = [ImportedMetric(TIME_METRIC, "s", result.times)]
    if result.memory_usage_byte is not None:
        metrics.append(ImportedMetric(MEMORY_METRIC, "B", [float(m) for m in result.memory_usage_byte]))
    extra = {"trial": np.arange(len(result.times), dtype=np.int64)}
    if result.exit_codes is not None:
        extra["exit_code"] = np.asarray([-1 if c is None else c for c in result.exit_codes], dtype=np.int64)
    kept = {key: getattr(result, key) for key in KEPT if getattr(result, key) is not None}
    imported = {
        "format": TOOL, "file": str(path), "index": index, "command": result.command,
        "parameters": dict(parameters), **kept,
    }
    digest = content_digest(TOOL, index, result.model_dump(mode="json", exclude_unset=True))
    return imported_run(tool=TOOL, benchmark=BENCHMARK, params=params, metrics=metrics, extra_columns=extra,
                        imported=imported, started_at=started_at, digest=digest)

