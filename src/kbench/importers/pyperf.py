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
The run starts at its first pyperf run's ``date``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from kbench.importers.common import ImportedMetric, imported_run, load_json_object
from kbench.store.recovery import PendingRun

TOOL = "pyperf"
BENCHMARK = "pyperf.benchmark"
UNITS = {"second": ("pyperf.benchmark.time", "s"), "byte": ("pyperf.benchmark.value", "B"),
         "integer": ("pyperf.benchmark.value", "count")}
"""pyperf's unit → (kbench metric, kbench unit)."""


def looks_like_pyperf(head: bytes) -> bool:
    text = head.lstrip()
    return text.startswith(b"{") and b'"benchmarks"' in text and b'"runs"' in text


def load_pyperf(path: Path) -> list[PendingRun]:
    document = load_json_object(path, TOOL)
    benchmarks = document.get("benchmarks")
    if not isinstance(benchmarks, list) or not benchmarks:
        raise ValueError(f"{path}: not a pyperf JSON file (no list of benchmarks)")
    common = document.get("metadata") or {}
    if not isinstance(common, dict):
        raise ValueError(f"{path}: metadata is not a mapping")
    fallback = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return [_run(path, document, common, index, bench, fallback + timedelta(milliseconds=10 * index))
            for index, bench in enumerate(benchmarks)]


def _run(path: Path, document: dict[str, Any], common: dict[str, Any], index: int, bench: Any,
         fallback: datetime) -> PendingRun:
    where = f"{path}: benchmarks[{index}]"
    if not isinstance(bench, dict) or not isinstance(bench.get("runs"), list):
        raise ValueError(f"{where}: has no runs")
    own = bench.get("metadata") or {}
    metadata = {**common, **own}
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: has no name")
    unit = metadata.get("unit", "second")
    if unit not in UNITS:
        raise ValueError(f"{where}: unknown pyperf unit {unit!r} (second, byte or integer)")
    metric, kbench_unit = UNITS[unit]
    values: list[float] = []
    run_index: list[int] = []
    runs = []
    for number, run in enumerate(bench["runs"]):
        if not isinstance(run, dict):
            raise ValueError(f"{where}: runs[{number}] is not a mapping")
        run_values = run.get("values") or []
        if not all(isinstance(v, int | float) for v in run_values):
            raise ValueError(f"{where}: runs[{number}] has values that are not numbers")
        values += [float(v) for v in run_values]
        run_index += [number] * len(run_values)
        runs.append({"metadata": run.get("metadata") or {}, "warmups": run.get("warmups") or [],
                     "values": len(run_values)})
    if not values:
        raise ValueError(f"{where} ({name}): no run has values")
    imported = {"format": TOOL, "file": str(path), "index": index, "version": document.get("version", "1.0"),
                "common_metadata": common, "metadata": own, "unit": unit, "runs": runs}
    return imported_run(
        tool=TOOL, benchmark=BENCHMARK, params={"name": name}, metrics=[ImportedMetric(metric, kbench_unit, values)],
        extra_columns={"trial": np.asarray(run_index, dtype=np.int64)}, imported=imported,
        started_at=_first_date(runs) or fallback,
    )


def _first_date(runs: list[dict[str, Any]]) -> datetime | None:
    """The first run's ``date`` (pyperf writes local time without a zone)."""
    for run in runs:
        text = run["metadata"].get("date")
        if isinstance(text, str):
            try:
                moment = datetime.fromisoformat(text)
            except ValueError:
                return None
            return moment.astimezone(UTC) if moment.tzinfo is None else moment
    return None
