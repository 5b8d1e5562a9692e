"""An LKP job file with nr_threads, perf-profile and proc-vmstat runs hackbench on this machine: the
perf-profile monitor profiles it (its delay option is a warning), proc-vmstat is sampled, nr_threads
becomes hackbench's groups, the runs are stored."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

LKP_JOBS = Path(__file__).resolve().parents[1] / "data" / "lkp-jobs"


@pytest.mark.skipif(shutil.which("hackbench") is None, reason="hackbench (rt-tests) is not installed")
def test_lkp_hackbench_job_runs_with_warnings_and_stores_its_runs(tmp_path: Path) -> None:
    db = tmp_path / "kbench.db"

    def kbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kbench.cli", "--db", str(db), *args], capture_output=True,
                              text=True, timeout=600, cwd=tmp_path, env=dict(os.environ, COLUMNS="200"))

    job = LKP_JOBS / "hackbench-pipe.yaml"
    proc = kbench("run", str(job))
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {job}:13: perf-profile.delay: ignored: kbench profiles each run" in proc.stderr
    assert "hackbench.pipe-process" in proc.stdout

    runs = json.loads(kbench("results", "--json").stdout)
    assert [(r["benchmark"], r["status"], r["n_samples"]) for r in runs] == [("hackbench.pipe-process", "complete", 3)]
    shown = json.loads(kbench("show", str(runs[0]["id"]), "--json").stdout)
    # 100% of this machine's CPUs, in groups of 2 × fds = 40 tasks
    groups = max(1, -(-(os.cpu_count() or 1) // 40))
    assert shown["params"] == {"loops": "20", "groups": str(groups)}
    ignored = [w.split(": ")[1] for w in shown["warnings"] if ": ignored: not supported" in w]
    assert ignored == ["testbox", "tbox_group", "kconfig", "rootfs", "sched_debug"]
    # proc-vmstat: sampled around each iteration, stored as metrics of the run beside hackbench's own
    metrics = [m["metric"] for m in shown["metrics"]]
    assert metrics[0] == "hackbench.pipe-process.time" and "proc-vmstat.pgfault" in metrics
    if shutil.which("perf") is not None:  # perf-profile: a profile of hackbench stored with the run
        assert shown["profile"]["samples"] > 0 and shown["profile"]["details"]["window"].startswith("whole tool")
    assert all(value > 0 for value in [shown["min"], shown["median"], shown["max"]])


@pytest.mark.skipif(shutil.which("hackbench") is None, reason="hackbench (rt-tests) is not installed")
def test_monitor_rows_follow_the_benchmarks_in_the_change_table(tmp_path: Path) -> None:
    """monitors: {vmstat: 1, interrupts: 1}: each run stores the figures as series of their own, and compare
    --runs prints them in the %change table under hackbench's row, each compared like it."""
    db = tmp_path / "kbench.db"
    job = tmp_path / "monitored.yaml"
    job.write_text("suite: hackbench\ntest: pipe-process\niterations: 3\nmonitors:\n  vmstat: 1\n  interrupts: 1\n"
                   "hackbench:\n  groups: 1\n  fds: 5\n  loops: 500\n")

    def kbench(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kbench.cli", "--db", str(db), *args], capture_output=True,
                              text=True, timeout=600, cwd=tmp_path, env=dict(os.environ, COLUMNS="200"))

    for _ in range(2):
        assert kbench("run", str(job)).returncode == 0
    runs = json.loads(kbench("results", "--json").stdout)
    assert len(runs) == 2
    series = json.loads(kbench("show", str(runs[0]["id"]), "--json").stdout)["metrics"]
    cs = next(m for m in series if m["metric"] == "vmstat.system.cs")
    assert cs["n"] == 3 and cs["unit"] == "/s" and all(v > 0 for v in cs["values"])
    proc = kbench("compare", "--runs", str(runs[1]["id"]), "--runs", str(runs[0]["id"]))
    assert proc.returncode == 0, proc.stderr
    rows = [line.split()[-2] if line.rstrip().endswith(")") else line.split()[-1]
            for line in proc.stdout.splitlines() if "%" in line and ("hackbench." in line or "vmstat." in line
                                                                     or "interrupts." in line)]
    assert rows[0] == "hackbench.pipe-process.time"
    assert "vmstat.system.cs" in rows and any(r.startswith("interrupts.LOC") for r in rows)
