"""Stored runs with planted medians: real Store writes, summaries computed by kbench's own code.

Each run holds ``samples`` lognormal samples scaled so that their median is exactly the
planted value; the summary stored with it is ``kbench.stats.summarize`` of those samples.
The runs' start times are set afterwards (nightly by default), as a week of cron would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import insert, select, update

from kbench.stats.summary import summarize
from kbench.store import schema
from kbench.store.codec import CODEC, encode_array
from kbench.store.db import Store, SummaryRecord

SYSINFO = {"hostname": "lab-box", "cpu": {"model": "Planted CPU @ 2.0GHz", "count": 2},
           "memory_bytes": 24 << 30, "noise": {}}
START = datetime(2026, 11, 1, 3, 0, tzinfo=UTC)

TICKS_PER_NS = 1_000_000
TIMER_HZ = 1e9 * TICKS_PER_NS
"""A planted run's timer: fine enough that the stored integer ticks keep a planted median
(to 1e-8 relative); the stored summary is kbench's summary of exactly those samples."""


def target(kernel: str = "6.1.0-56-amd64", kind: str = "local", accel: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "kernel_release": kernel, "kernel_version": f"#1 SMP {kernel}", "accel": accel,
            "details": {"spec": f"deb:{kernel}"} if kind == "vm" else {}}


def plant_series(
    store: Store, values: Sequence[float], *, benchmark: str = "syscall.getppid",
    metric: str | None = None, unit: str = "ns", direction: str = "lower",
    params: Mapping[str, str] | None = None, sysinfo: Mapping[str, Any] | None = None,
    kernels: Sequence[str] | None = None, commits: Sequence[str | None] | None = None,
    labels: Sequence[str | None] | None = None, kind: str = "local", accel: str | None = None,
    start: datetime = START, every: timedelta = timedelta(days=1), samples: int = 64, seed: int = 0,
) -> list[int]:
    """Store one complete run per value, oldest first; returns the run ids."""
    rng = np.random.default_rng(seed)
    metric = metric or f"{benchmark}.latency"
    run_ids = []
    for i, value in enumerate(values):
        noise = rng.lognormal(0.0, 0.05, size=samples)
        data = noise * (float(value) / float(np.median(noise)))
        ticks = np.rint(data * TICKS_PER_NS).astype(np.uint64)
        summary = summarize(ticks / TICKS_PER_NS)  # what kbench makes of the stored samples
        kernel = kernels[i] if kernels else "6.1.0-56-amd64"
        run_id = store.begin_run(
            benchmark=benchmark, metric=metric, unit=unit, direction=direction, params=dict(params or {}),
            request={"benchmark": benchmark, "params": dict(params or {}), "samples": samples},
            sysinfo=dict(sysinfo or SYSINFO), target=target(kernel, kind, accel),
            commit=commits[i] if commits else None, label=labels[i] if labels else None,
        )
        record = SummaryRecord(
            metric=metric, unit=unit, basis="raw", details=summary.to_dict(),
            values={"n": summary.n, "min": summary.min, "median": summary.p50, "p90": summary.p90,
                    "p95": summary.p95, "p99": summary.p99, "max": summary.max, "mean": summary.mean,
                    "stdev": summary.stdev, "mad": summary.mad, "steady_state_index": summary.steady_state_index},
        )
        store.finish_run(run_id, status="complete", columns={"ticks": ticks},
                         probe_header={"batch": 1, "timer": {"hz": TIMER_HZ}}, summaries=[record])
        with store.engine.begin() as conn:
            conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(started_at=start + i * every))
        run_ids.append(run_id)
    return run_ids


def noisy(n: int, level: float = 100.0, cv: float = 0.005, seed: int = 0) -> np.ndarray:
    """``n`` run medians around ``level`` with run-to-run noise ``cv``."""
    return level * (1.0 + cv * np.random.default_rng(seed).standard_normal(n))


def fake_commits(n: int, seed: int = 0) -> list[str]:
    rng = np.random.default_rng(seed)
    return ["".join(f"{b:02x}" for b in rng.integers(0, 256, size=20)) for _ in range(n)]


def plant_bulk(store: Store, values: Sequence[float], *, benchmark: str = "syscall.getppid",
               start: datetime = START, every: timedelta = timedelta(hours=1), samples: int = 32,
               seed: int = 0) -> list[int]:
    """Like ``plant_series`` for many points: the same rows, written in one transaction."""
    rng = np.random.default_rng(seed)
    metric = f"{benchmark}.latency"
    first = store.begin_run(benchmark=benchmark, metric=metric, unit="ns", direction="lower", params={},
                            request={"benchmark": benchmark, "samples": samples}, sysinfo=dict(SYSINFO),
                            target=target())
    with store.engine.begin() as conn:
        row = conn.execute(select(schema.runs.c.machine_id, schema.runs.c.target_id)
                           .where(schema.runs.c.id == first)).one()
        conn.execute(schema.runs.delete().where(schema.runs.c.id == first))
        runs, summaries, blobs = [], [], []
        for i, value in enumerate(values):
            noise = rng.lognormal(0.0, 0.05, size=samples)
            data = noise * (float(value) / float(np.median(noise)))
            ticks = np.rint(data * TICKS_PER_NS).astype(np.uint64)
            summary = summarize(ticks / TICKS_PER_NS, detect_warmup=False)
            run_id = first + i
            moment = start + i * every
            runs.append({"id": run_id, "benchmark": benchmark, "metric": metric, "unit": "ns", "direction": "lower",
                         "status": "complete", "params": {}, "request": {"benchmark": benchmark, "samples": samples},
                         "sysinfo": dict(SYSINFO), "tags": [], "warnings": [], "machine_id": row[0],
                         "target_id": row[1], "n_samples": samples, "started_at": moment, "finished_at": moment,
                         "probe_header": {"batch": 1, "timer": {"hz": TIMER_HZ}}, "timer": {"hz": TIMER_HZ},
                         "batch": 1})
            summaries.append({"run_id": run_id, "metric": metric, "unit": "ns", "basis": "raw", "n": summary.n,
                              "min": summary.min, "median": summary.p50, "p90": summary.p90, "p95": summary.p95,
                              "p99": summary.p99, "max": summary.max, "mean": summary.mean, "stdev": summary.stdev,
                              "mad": summary.mad, "steady_state_index": 0, "details": summary.to_dict()})
            dtype, blob = encode_array(ticks)
            blobs.append({"run_id": run_id, "column": "ticks", "dtype": dtype, "codec": CODEC, "count": samples,
                          "data": blob})
        conn.execute(insert(schema.runs), runs)
        conn.execute(insert(schema.summaries), summaries)
        conn.execute(insert(schema.samples), blobs)
    return [first + i for i in range(len(values))]


def plant_finding(
    store: Store, *, culprit: str, good: str, bad: str, benchmark: str = "syscall.getppid",
    metric: str | None = None, params: Mapping[str, str] | None = None, kind: str = "regression",
    status: str | None = "open", fixed_in: str | None = None, change_pct: float = 4.0,
    parent_median: float = 200.0, repo: str = "/src/planted", branch: str = "main", watch_key: str = "planted",
    run_ids: Sequence[int] = (),
) -> int:
    """A finding a watch confirmed, as ``kbench watch`` writes it (``kbench.store.watch``): the watch's
    row, then the finding with its side-by-side verification of the culprit against its parent
    (``BuildComparison.to_json``, two planted slots a side) and its status. Returns its id."""
    from kbench.store.watch import WatchStore

    watches = WatchStore(store.engine)
    row, _ = watches.open_watch(key=watch_key, repo=repo, branches=[branch], build="make",
                                job_path=f"{repo}/job.yaml", job_text="benchmark: command\n", options={})
    metric = metric or f"{benchmark}.latency"
    new_median = parent_median * (1 + change_pct / 100)
    verification = {"why": "verify", "base": {"commit": f"{culprit}^", "median": parent_median, "stdev_pct": 0.5,
                                               "slots": 40},
                    "new": {"commit": culprit, "median": new_median, "stdev_pct": 0.6, "slots": 40},
                    "verdict": {"verdict": "regression" if kind == "regression" else "improvement",
                                "change_pct": change_pct, "ci_pct": [change_pct - 0.4, change_pct + 0.4],
                                "p_value": 1e-6, "confidence": 0.95, "unit": "ns"},
                    "blocks": 20, "elapsed_s": 10.0, "design": "interleaved", "run_ids": list(run_ids)}
    finding = watches.add_finding(int(row["id"]), branch=branch, instance_id="i0", benchmark=benchmark,
                                  metric=metric, params=dict(params or {}), series_id=None, kind=kind, good=good,
                                  bad=bad, candidate={})
    watches.update_finding(finding, state="confirmed", culprit=culprit, culprit_subject=f"subject of {culprit[:7]}",
                           verification=[verification], status=status, fixed_in=fixed_in)
    return finding
