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

hyperfine records no time: a run starts at the file's modification time, 10 ms apart per
result, which keeps the runs of one file distinct and a second import of it a no-op.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from kbench.importers.common import ImportedMetric, imported_run, load_json_object
from kbench.store.recovery import PendingRun

TOOL = "hyperfine"
BENCHMARK = "hyperfine.command"
TIME_METRIC = "hyperfine.command.time"
MEMORY_METRIC = "hyperfine.command.memory"
KEPT = ("mean", "stddev", "median", "user", "system", "min", "max")
"""The per-command figures hyperfine computed, kept in the header as it wrote them."""


def looks_like_hyperfine(head: bytes) -> bool:
    text = head.lstrip()
    return text.startswith(b"{") and b'"results"' in text[:64] and b'"command"' in text


def load_hyperfine(path: Path) -> list[PendingRun]:
    document = load_json_object(path, TOOL)
    results = document.get("results")
    if not isinstance(results, list) or not results:
        raise ValueError(f"{path}: not a hyperfine --export-json file (no list of results)")
    mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
    return [_run(path, index, result, mtime + timedelta(milliseconds=10 * index))
            for index, result in enumerate(results)]


def _run(path: Path, index: int, result: Any, started_at: datetime) -> PendingRun:
    where = f"{path}: results[{index}]"
    if not isinstance(result, dict) or not isinstance(result.get("command"), str):
        raise ValueError(f"{where}: has no command")
    times = result.get("times")
    if not isinstance(times, list) or not times or not all(isinstance(t, int | float) for t in times):
        raise ValueError(f"{where}: has no times (a list of seconds)")
    parameters = result.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise ValueError(f"{where}: parameters is not a mapping")
    params = {"command": result["command"], **{str(k): str(v) for k, v in parameters.items()}}
    metrics = [ImportedMetric(TIME_METRIC, "s", [float(t) for t in times])]
    memory = result.get("memory_usage_byte")
    if isinstance(memory, list) and len(memory) == len(times):
        metrics.append(ImportedMetric(MEMORY_METRIC, "B", [float(m) for m in memory]))
    extra = {"trial": np.arange(len(times), dtype=np.int64)}
    exit_codes = result.get("exit_codes")
    if isinstance(exit_codes, list) and len(exit_codes) == len(times):
        extra["exit_code"] = np.asarray([-1 if c is None else int(c) for c in exit_codes], dtype=np.int64)
    imported = {
        "format": TOOL, "file": str(path), "index": index, "command": result["command"],
        "parameters": {str(k): v for k, v in parameters.items()},
        **{key: result[key] for key in KEPT if isinstance(result.get(key), int | float)},
    }
    return imported_run(tool=TOOL, benchmark=BENCHMARK, params=params, metrics=metrics, extra_columns=extra,
                        imported=imported, started_at=started_at)
