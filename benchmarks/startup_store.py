"""A results store of N complete runs for start-up timing (benchmarks/startup.py --store-runs N).

Ten series of ``syscall.getppid`` (parameter ``spin`` = 0..9), the runs spread over them
night after night, each with 2,000 samples of a lognormal latency and the summary kbench
computes of them, a 3 % step in the middle of series 0 and labels and commits like nightly
runs; plus a hyperfine JSON file of two commands for ``kbench import``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from kbench.stats.summary import summarize
from kbench.store.db import Store, SummaryRecord
from kbench.targets.probe_output import PROBE_FORMAT

SERIES = 10
SAMPLES = 2000
TIMER_HZ = 2.4e9
SYSINFO = {"hostname": "bench-box", "cpu": {"model": "Bench CPU @ 2.4GHz", "count": 2}, "memory_bytes": 24 << 30,
           "kernel": {"release": "6.1.0-56-amd64"}, "noise": {}}
TARGET = {"kind": "local", "kernel_release": "6.1.0-56-amd64", "kernel_version": "#1 SMP", "accel": None,
          "details": {}}


def make_store(path: Path, runs: int, seed: int = 1) -> dict[str, list[int]]:
    """Write ``runs`` runs into a new SQLite file; returns the run ids of each series ("spin=K")."""
    rng = np.random.default_rng(seed)
    store = Store.open(f"sqlite:///{path}")
    ids: dict[str, list[int]] = {}
    for index in range(runs):
        spin = index % SERIES
        night = index // SERIES
        level = 160.0 + 10 * spin
        if spin == 0 and night >= runs // (2 * SERIES):
            level *= 1.03
        ticks = np.rint(rng.lognormal(np.log(level * TIMER_HZ / 1e9), 0.05, SAMPLES)).astype(np.uint64)
        values = ticks / (TIMER_HZ / 1e9)
        summary = summarize(values)
        params = {"spin": str(spin)}
        run_id = store.begin_run(
            benchmark="syscall.getppid", metric="syscall.getppid.latency", unit="ns", direction="lower",
            params=params, request={"benchmark": "syscall.getppid", "params": params, "samples": SAMPLES},
            sysinfo=SYSINFO, target=TARGET, commit=f"{night:040x}", label=f"nightly-{night}",
        )
        record = SummaryRecord(
            metric="syscall.getppid.latency", unit="ns", basis="raw", details=summary.to_dict(),
            values={"n": summary.n, "min": summary.min, "median": summary.p50, "p90": summary.p90,
                    "p95": summary.p95, "p99": summary.p99, "max": summary.max, "mean": summary.mean,
                    "stdev": summary.stdev, "mad": summary.mad, "steady_state_index": summary.steady_state_index},
        )
        header = {"format": PROBE_FORMAT, "batch": 1, "timer": {"name": "tsc", "hz": TIMER_HZ}}  # as the probe writes
        store.finish_run(run_id, status="complete", columns={"ticks": ticks}, probe_header=header, summaries=[record])
        ids.setdefault(f"spin={spin}", []).append(run_id)
    store.engine.dispose()
    return ids


def hyperfine_file(path: Path, seed: int = 2) -> Path:
    """A hyperfine --export-json file of two commands, 20 executions each."""
    rng = np.random.default_rng(seed)
    results = []
    for command, centre in (("sleep 0.01", 0.0102), ("sleep 0.02", 0.0202)):
        times = [float(t) for t in centre * (1 + 0.01 * rng.standard_normal(20))]
        results.append({"command": command, "mean": float(np.mean(times)), "stddev": float(np.std(times, ddof=1)),
                        "median": float(np.median(times)), "user": 0.001, "system": 0.0002, "min": min(times),
                        "max": max(times), "times": times, "exit_codes": [0] * 20})
    path.write_text(json.dumps({"results": results}))
    return path
