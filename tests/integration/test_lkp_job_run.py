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
