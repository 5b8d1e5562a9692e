"""Runs as a pyperf JSON file (``python -m pyperf stats|compare_to`` read it).

``{"version": "1.0", "metadata": {...}, "benchmarks": [benchmark per group]}``. A benchmark
imported from pyperf is written back as it was read: its metadata, every pyperf run with
its metadata, warm-ups and values (calibration runs included), the file's common metadata
at the top. Any other group becomes a benchmark named after the group (metadata ``name``,
``unit: second``, ``kbench_runs``), with one pyperf run per kbench trial, values in seconds
and the run's start as ``date``. pyperf takes only values above 0: a run with values <= 0
(an overhead-corrected one, say) cannot be written, nor a metric that is not a time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kbench.report.interop.common import ExportProblem, Group, describe, imported, seconds, trials


def render(groups: Sequence[Group]) -> bytes:
    commons = [_common(group) for group in groups]
    shared = commons[0] if all(common == commons[0] for common in commons) else {}
    benchmarks = []
    for group, common in zip(groups, commons, strict=True):
        bench = benchmark(group)
        extra = {k: v for k, v in common.items() if k not in shared}
        if extra:
            bench["metadata"] = {**extra, **bench.get("metadata", {})}
        benchmarks.append(bench)
    document = {"version": "1.0", "metadata": shared, "benchmarks": benchmarks}
    return (json.dumps(document, sort_keys=True) + "\n").encode()


def _common(group: Group) -> dict[str, Any]:
    source = imported(group.first, "pyperf")
    common = source.get("common_metadata") if source is not None else None
    return dict(common) if isinstance(common, dict) else {}


def benchmark(group: Group) -> dict[str, Any]:
    sources = [imported(view, "pyperf") for view in group.views]
    if all(s is not None for s in sources):
        runs = [run for view, source in zip(group.views, sources, strict=True) if source is not None
                for run in _runs_back(view, source)]
        first = sources[0]
        assert first is not None
        own = dict(first.get("metadata") or {})  # type: ignore[call-overload]
        bench: dict[str, Any] = {"runs": runs}
        if own:
            bench["metadata"] = own
        return bench
    name = describe(group.first) if len(group.views) == 1 else f"{describe(group.first)} ({group.label})"
    runs = []
    for view in group.views:
        scale = seconds(view, "pyperf")
        date = view.record.started_at.strftime("%Y-%m-%d %H:%M:%S.%f")
        for values in trials(view):
            written = [float(v) * scale for v in values]
            if not written:
                continue
            if min(written) <= 0:
                raise ExportProblem(f"run {view.record.id} has values <= 0, which pyperf refuses")
            runs.append({"metadata": {"date": date, "kbench_run": view.record.id}, "values": written})
    if not runs:
        raise ExportProblem(f"{group.label} has no values")
    ids = ",".join(str(view.record.id) for view in group.views)
    return {"metadata": {"name": name, "unit": "second", "kbench_runs": ids}, "runs": runs}


def _runs_back(view: Any, source: dict[str, Any]) -> list[dict[str, Any]]:
    """The pyperf runs of an imported benchmark: each run's values are the next ``values``
    of the stored samples (in seconds for pyperf's time unit, as stored)."""
    values = [float(v) for v in view.values]
    runs = []
    start = 0
    for run in source.get("runs") or []:
        count = int(run.get("values") or 0)
        back: dict[str, Any] = {"metadata": run.get("metadata") or {}}
        if run.get("warmups"):
            back["warmups"] = run["warmups"]
        if count:
            back["values"] = values[start:start + count]
        start += count
        runs.append(back)
    if start != len(values):
        raise ExportProblem(f"run {view.record.id}: its header lists {start} pyperf values, its samples {len(values)}")
    return runs
