"""Runs written with the real Store, headers and samples as a probe run leaves them, for
tests of what ``show``, ``results`` and the reports print about them."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from kbench.stats.summary import summarize
from kbench.store.db import Store, SummaryRecord

TIMER_HZ = 2.4e9
"""The planted runs' timer: ticks of 1/2.4 ns."""
SYSINFO = {"hostname": "lab-box", "cpu": {"model": "Planted CPU @ 2.4GHz", "count": 2},
           "memory_bytes": 24 << 30, "kernel": {"release": "6.1.0-56-amd64"}, "noise": {}}


def store_run(
    store: Store, ticks: Sequence[int] | np.ndarray, *, benchmark: str = "syscall.getppid",
    header: Mapping[str, Any] | None = None, params: Mapping[str, str] | None = None,
    commit: str | None = None, label: str | None = None, sysinfo: Mapping[str, Any] | None = None,
    target: Mapping[str, Any] | None = None, batch: int = 1, unit: str = "ns",
    columns: Mapping[str, np.ndarray] | None = None,
) -> int:
    """One complete run of per-sample ``ticks`` (per op: ticks / batch / 2.4 ns, or in seconds for
    ``unit="s"``); its summary is kbench's summary of exactly those values."""
    raw = np.asarray(ticks, dtype=np.uint64)
    values = raw / batch / (TIMER_HZ / 1e9) / (1e9 if unit == "s" else 1.0)
    summary = summarize(values)
    metric = f"{benchmark}.latency"
    run_id = store.begin_run(
        benchmark=benchmark, metric=metric, unit=unit, direction="lower", params=dict(params or {}),
        request={"benchmark": benchmark, "params": dict(params or {}), "samples": int(raw.size)},
        sysinfo=dict(sysinfo or SYSINFO),
        target=dict(target or {"kind": "local", "kernel_release": "6.1.0-56-amd64", "kernel_version": "#1 SMP",
                            "accel": None, "details": {}}),
        commit=commit, label=label,
    )
    record = SummaryRecord(
        metric=metric, unit=unit, basis="raw", details=summary.to_dict(),
        values={"n": summary.n, "min": summary.min, "median": summary.p50, "p90": summary.p90, "p95": summary.p95,
                "p99": summary.p99, "max": summary.max, "mean": summary.mean, "stdev": summary.stdev,
                "mad": summary.mad, "steady_state_index": summary.steady_state_index},
    )
    store.finish_run(run_id, status="complete", columns={"ticks": raw, **(columns or {})},
                     probe_header={"batch": batch, "timer": {"name": "tsc", "hz": TIMER_HZ}, **(header or {})},
                     summaries=[record])
    return run_id


def kbench_in_process(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real command line, in this process (click's runner): a fresh interpreter per call
    costs seconds on a loaded machine."""
    from click.testing import CliRunner

    from kbench.cli.main import cli

    result = CliRunner().invoke(cli, ["--db", str(db), *args], catch_exceptions=False)
    return subprocess.CompletedProcess(args, result.exit_code, result.stdout, result.stderr)
