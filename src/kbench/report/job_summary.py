"""Text summary of a job run: one row per instance, and scaling curves for nr_task sweeps."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from kbench.engine.job_runner import InstanceRuns
from kbench.jobs import varying_keys
from kbench.kinds.registry import kind_of
from kbench.report.run_json import summary_line
from kbench.report.units import format_value

CURVE_WIDTH = 40


def _median_of_runs(entry: InstanceRuns, metric: str) -> float | None:
    values = [
        float(np.median(series.values))
        for run in entry.runs
        for series in run.series
        if series.name == metric and series.values.size
    ]
    return float(np.median(values)) if values else None


def instance_rows(entries: list[InstanceRuns]) -> tuple[list[str], list[list[str]]]:
    """Columns (id, the varying keys, metric, median over trials, runs) and one row per instance."""
    varying = [key for key in varying_keys([e.instance for e in entries]) if key != "benchmark"]
    columns = ["id", "benchmark", *varying, "metric", "median", "runs"]
    rows = []
    for entry in entries:
        described = entry.instance.describe()
        primary = entry.runs[0].metric if entry.runs else "-"
        unit = entry.runs[0].benchmark.unit if entry.runs else ""
        median = _median_of_runs(entry, primary)
        rows.append([
            entry.instance.id, entry.instance.benchmark, *(described.get(key, "") for key in varying), primary,
            format_value(median, unit) if median is not None else "-",
            ",".join(str(run.run_id) for run in entry.runs),
        ])
    return columns, rows


def quiet_lines(entries: list[InstanceRuns]) -> list[str]:
    """One line per instance (``kbench run -q JOB.yaml``): id, benchmark, median over its runs,
    unit, the primary metric's values pooled over the runs, and the run ids."""
    lines = []
    for entry in entries:
        primary = entry.runs[0].metric if entry.runs else ""
        unit = entry.runs[0].benchmark.unit if entry.runs else "-"
        n = sum(series.values.size for run in entry.runs for series in run.series if series.name == primary)
        runs = ",".join(str(run.run_id) for run in entry.runs) or "-"
        lines.append(f"{entry.instance.id} "
                     f"{summary_line(entry.instance.benchmark, _median_of_runs(entry, primary), unit, n)} runs {runs}")
    return lines


def scaling_curves(entries: list[InstanceRuns]) -> dict[str, list[tuple[int, float, float]]]:
    """For every benchmark+mode swept over nr_task: (nr_task, per-task ops/s, total ops/s), sorted."""
    curves: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
    for entry in entries:
        instance = entry.instance
        if not entry.runs or not kind_of(entry.runs[0].benchmark).scaling or instance.nr_task is None:
            continue
        primary = entry.runs[0].metric
        total_name = primary.rsplit(".", 1)[0] + ".ops"
        per_task = _median_of_runs(entry, primary)
        total = _median_of_runs(entry, total_name)
        if per_task is not None and total is not None:
            key = f"{primary} ({instance.mode or 'process'})"
            curves[key].append((instance.nr_task, per_task, total))
    return {key: sorted(points) for key, points in curves.items() if len(points) > 1}


def scaling_lines(name: str, points: list[tuple[int, float, float]]) -> list[str]:
    """A table with a bar per task count: total ops/s, and efficiency vs perfect scaling."""
    lines = [f"scaling curve: {name}", "  nr_task   per task ops/s      total ops/s   efficiency"]
    peak = max(total for _, _, total in points)
    base_tasks, base_per_task, _ = points[0]
    for tasks, per_task, total in points:
        efficiency = per_task / base_per_task if base_per_task else float("nan")
        bar = "█" * max(round(CURVE_WIDTH * total / peak), 1) if peak else ""
        lines.append(f"  {tasks:>7} {per_task:>16,.0f} {total:>16,.0f}   {efficiency:>9.0%}  {bar}")
    lines.append(f"  (efficiency: per-task rate relative to {base_tasks} task{'s' if base_tasks != 1 else ''})")
    return lines


def job_json(entries: list[InstanceRuns]) -> list[dict[str, Any]]:
    return [
        {
            "id": entry.instance.id,
            "instance": entry.instance.to_dict(),
            "runs": [run.run_id for run in entry.runs],
            "metric": entry.runs[0].metric if entry.runs else None,
            "median": _median_of_runs(entry, entry.runs[0].metric) if entry.runs else None,
            "status": [run.status for run in entry.runs],
        }
        for entry in entries
    ]
