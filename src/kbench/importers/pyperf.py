"""pyperf's JSON files (``-o FILE``, ``pyperf timeit``, pyperformance): one run per benchmark.

A file is ``{"version": "1.0", "metadata": {...common...}, "benchmarks": [{"metadata":
{"name", "unit", "loops"...}?, "runs": [{"metadata": {...}, "warmups": [[loops, value]...]?,
"values": [...]?}...]}]}``; a benchmark's metadata is the file's common metadata updated
by its own. Each benchmark becomes a run of ``pyperf.benchmark``: parameter ``name``,
metric ``pyperf.benchmark.time`` in seconds per loop iteration (``.value`` for pyperf's
byte and integer units), every value of every pyperf run (a worker process) in order,
with the ``trial`` column saying which one it came from (``kbench compare`` takes each
pyperf run as one trial). Warm-ups, calibration runs and all
metadata are kept in the header, so an export as pyperf gives the file's benchmark back.
The run starts at its first pyperf run's ``date``. Every field kbench reads is checked for
its type first (``PyperfFile``), and a run is identified by a digest of its benchmark's
entry and the file's common metadata.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, StrictStr

from kbench.importers.common import (
    FiniteNumber,
    ImportedFile,
    ImportedMetric,
    NonNegativeInt64,
    imported_run,
    validated_json,
)
from kbench.store.recovery import PendingRun, content_digest

TOOL = "pyperf"
BENCHMARK = "pyperf.benchmark"
UNITS = {"second": ("pyperf.benchmark.time", "s"), "byte": ("pyperf.benchmark.value", "B"),
         "integer": ("pyperf.benchmark.value", "count")}
"""pyperf's unit → (kbench metric, kbench unit)."""


class PyperfRun(ImportedFile):
    """One pyperf run (a worker process): calibration runs have warm-ups only."""

    metadata: dict[str, Any] | None = None
    warmups: list[tuple[NonNegativeInt64, FiniteNumber]] | None = None
    """[loops, value] pairs."""
    values: list[FiniteNumber] | None = None


class PyperfBenchmark(ImportedFile):
    metadata: dict[str, Any] | None = None
    runs: list[PyperfRun] = Field(min_length=1)


class PyperfFile(ImportedFile):
    version: StrictStr = "1.0"
    metadata: dict[str, Any] | None = None
    benchmarks: list[PyperfBenchmark] = Field(min_length=1)


def looks_like_pyperf(head: bytes) -> bool:
    text = head.lstrip()
    return text.startswith(b"{") and b'"benchmarks"' in text and b'"runs"' in text


def load_pyperf(path: Path, data: bytes) -> list[PendingRun]:
    document = validated_json(PyperfFile, data, path, "pyperf file")
    fallback = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return [_run(path, document, index, bench, fallback + timedelta(milliseconds=10 * index))
            for index, bench in enumerate(document.benchmarks)]


def _run(path: Path, document: PyperfFile, index: int, bench: PyperfBenchmark, fallback: datetime) -> PendingRun:
    where = f"{path}: damaged pyperf file: benchmarks[{index}]"
    common = document.metadata or {}
    own = bench.metadata or {}
    metadata = {**common, **own}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}.metadata.name: a non-empty string expected (got {_short(name)})")
    unit = metadata.get("unit", "second")
    if not isinstance(unit, str) or unit not in UNITS:
        field = f"{where}.metadata.unit" if "unit" in own else f"{path}: damaged pyperf file: metadata.unit"
        raise ValueError(f"{field}: unknown pyperf unit {_short(unit)} (second, byte or integer expected)")
    metric, kbench_unit = UNITS[unit]
    values: list[float] = []
    run_index: list[int] = []
    runs = []
    for number, run in enumerate(bench.runs):
        run_values = run.values or []
        values += run_values
        run_index += [number] * len(run_values)
        runs.append({"metadata": run.metadata or {}, "warmups": [list(pair) for pair in run.warmups or []],
                     "values": len(run_values)})
    if not values:
        raise ValueError(f"{where} ({name}): no run has values")
    imported = {"format": TOOL, "file": str(path), "index": index, "version": document.version,
                "common_metadata": common, "metadata": own, "unit": unit, "runs": runs}
    digest = content_digest(TOOL, document.version, common, index, bench.model_dump(mode="json", exclude_unset=True))
    return imported_run(
        tool=TOOL, benchmark=BENCHMARK, params={"name": name}, metrics=[ImportedMetric(metric, kbench_unit, values)],
        extra_columns={"trial": np.asarray(run_index, dtype=np.int64)}, imported=imported,
        started_at=_first_date(runs) or fallback, digest=digest,
    )


def _short(value: Any) -> str:
    import json

    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def _first_date(runs: list[dict[str, Any]]) -> datetime | None:
    """The first run's ``date`` (pyperf writes local time without a zone)."""
    for run in runs:
        text = run["metadata"].get("date")
        if isinstance(text, str):
            try:
                moment = datetime.fromisoformat(text)
                return moment.astimezone(UTC) if moment.tzinfo is None else moment
            except (ValueError, OverflowError):  # not a date, or beyond what a datetime holds
                return None
    return None
