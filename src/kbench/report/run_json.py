"""One run as JSON (``kbench run --json``, ``kbench show --json``) and as one line (``-q``).

The run is the engine's stored-run model (``kbench.engine.stored_run``), from a fresh run
or from the store alike.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kbench.profile.folded import is_kernel, plain_symbol
from kbench.report.counted_run import counted_run_json, is_counted

if TYPE_CHECKING:
    from kbench.contract.series import MetricSeries
    from kbench.engine.stored_run import StoredRun
    from kbench.profile.folded import FoldedProfile
    from kbench.stats.summary import Summary
    from kbench.store.db import RunRecord


def run_json(run: StoredRun, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The one JSON object ``kbench run --json`` and ``kbench show --json`` print."""
    summary, measurement, series = run.summary, run.measurement, run.series
    header = measurement.header
    data: dict[str, Any] = {
        "run_id": run.run_id,
        "metric": run.metric,
        "unit": run.unit,
        "status": run.status,
        "basis": run.basis,
        "batch": header.get("batch"),
        "timer": header.get("timer"),
        "overhead": measurement.overhead_ns() if header.get("overhead") else None,
        "usage": header.get("usage"),
        "warnings": run.warnings,
        "failed_executions": measurement.failed_executions,
    }
    if is_counted(run):
        data["instructions"] = counted_run_json(run)
    if summary is not None:
        data.update(
            n=summary.n,
            min=summary.min,
            median=summary.p50,
            p90=summary.p90,
            p95=summary.p95,
            p99=summary.p99,
            p999=summary.p999,
            max=summary.max,
            mad=summary.mad,
            mean=summary.mean,
            stdev=summary.stdev,
            median_ci=list(summary.median_ci),
            median_ci_level=summary.median_ci_level,
            outliers=summary.outliers,
            steady_state_index=summary.steady_state_index,
        )
        ns_per_cycle = cycle_ns(header) if run.unit == "cycles" else None
        if ns_per_cycle is not None:
            data["ns"] = {"ns_per_cycle": ns_per_cycle, "min": summary.min * ns_per_cycle,
                          "median": summary.p50 * ns_per_cycle, "p99": summary.p99 * ns_per_cycle,
                          "max": summary.max * ns_per_cycle, "mean": summary.mean * ns_per_cycle}
    else:
        data.update(n=0)
    if series and len(series) > 1:
        data["metrics"] = [_series_json(s, run.summaries.get(s.name)) for s in series]
    cpu = child_cpu_summary(run)
    if cpu is not None:
        data["cpu_time"] = {
            "what": CHILD_CPU, "unit": "ns", "n": cpu.n, "median": cpu.p50, "median_ci": list(cpu.median_ci),
            "mean": cpu.mean, "stdev": cpu.stdev, "min": cpu.min, "p90": cpu.p90, "max": cpu.max,
        }
    if header.get("trace"):
        from kbench.report.trace_run import run_trace_json

        data.update(run_trace_json(measurement))
    if header.get("counters"):
        from kbench.profile.counters import counters_json

        data.update(counters_json(header))
    if header.get("crosscheck"):
        data["crosscheck"] = header["crosscheck"]
    if header.get("tracking"):
        from kbench.trace.tracking_report import tracking_json

        data.update(tracking_json(header))
    data.update(extra or {})
    return data


CHILD_CPU = "user + system CPU time of each execution (wait4's rusage of the child)"


def child_cpu_summary(run: StoredRun) -> Summary | None:
    """The summary of each execution's CPU time for a run of commands (columns ``utime_ns`` and
    ``stime_ns``), next to the wall time the run's metric is; None for other runs."""
    import numpy as np

    from kbench.stats.summary import summarize

    columns = run.measurement.columns
    if "utime_ns" not in columns or "stime_ns" not in columns or not columns["utime_ns"].size:
        return None
    cpu = columns["utime_ns"].astype(np.float64) + columns["stime_ns"].astype(np.float64)
    return summarize(cpu, detect_warmup=False)


def cycle_ns(header: dict[str, Any]) -> float | None:
    """Nanoseconds per cycle of an in-kernel run (its TSC rate, ``timer.hz``); None without one."""
    hz = float((header.get("timer") or {}).get("hz") or 0)
    return 1e9 / hz if hz > 0 else None


def run_context_json(record: RunRecord) -> dict[str, Any]:
    """What was measured, where and when: the keys ``run --json`` and ``show --json`` add to ``run_json``."""
    return {
        "benchmark": record.benchmark,
        "params": record.params,
        "target": record.target,
        "kernel": kernel_json(record.target),
        "tags": record.tags,
        "commit": record.commit,
        "label": record.label,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
    }


def kernel_json(target: dict[str, Any] | None) -> dict[str, Any] | None:
    """The kernel a run ran on: its release, its ``.config``'s digest (None when unknown) and,
    for a kernel kbench built (a ``tree:`` spec), the commit and tree it was built from."""
    if not target:
        return None
    own = (target.get("details") or {}).get("kernel") or {}
    return {
        "release": target.get("kernel_release"),
        "config_digest": target.get("config_digest") or own.get("config_digest"),
        "commit": own.get("commit"),
        "tree": own.get("tree"),
        "build_id": target.get("build_id"),
    }


def kernel_text(target: dict[str, Any] | None) -> str:
    """`` (config 3fa2c1d0e5b7, commit 840cefa20c27 of /src/linux)`` for a run's kernel, as far as known."""
    kernel = kernel_json(target) or {}
    parts = []
    if kernel.get("config_digest"):
        parts.append(f"config {kernel['config_digest'][:12]}")
    if kernel.get("commit"):
        parts.append(f"commit {kernel['commit'][:12]} of {kernel.get('tree') or '?'}")
    elif kernel.get("tree"):
        parts.append(f"built from {kernel['tree']}")
    return f" ({', '.join(parts)})" if parts else ""


def profile_json(profile: FoldedProfile | None, problem: str | None = None, top: int = 15) -> dict[str, Any]:
    """The ``profile`` key of ``run --profile --json`` / ``show --json``: how it was sampled and the
    frames with the largest self share (``kbench.profile.folded``), or why there is none."""
    if profile is None:
        return {"profile": {"error": problem}} if problem else {}
    return {"profile": {
        "event": profile.event, "frequency_hz": profile.frequency_hz, "samples": profile.samples,
        "weight": profile.total, "details": dict(profile.details),
        "top": [{"symbol": plain_symbol(frame), "where": "kernel" if is_kernel(frame) else "user",
                 "self_pct": 100 * own, "children_pct": 100 * children}
                for frame, own, children in profile.top(top)],
    }}


def summary_line(name: str, median: float | None, unit: str, n: int) -> str:
    """``syscall.getppid median 61.2 ns n=10000``: one run (or instance) on one line, for ``-q``."""
    value = f"{median:.6g}" if median is not None else "-"
    return f"{name} median {value} {unit} n={n}"


def _series_json(series: MetricSeries, stored: Summary | None) -> dict[str, Any]:
    from kbench.stats.summary import summarize

    summary = stored or summarize(series.values)
    return {
        "metric": series.name, "unit": series.unit, "direction": series.direction, "n": summary.n,
        "values": series.values.tolist(), "min": summary.min, "median": summary.p50, "max": summary.max,
        "mean": summary.mean, "stdev": summary.stdev,
    }
