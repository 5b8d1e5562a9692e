"""Ctrl-C during a run keeps every finished sample and marks the run interrupted."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path


def test_sigint_keeps_finished_samples(db_path: Path) -> None:
    env = dict(os.environ, KBENCH_DB=str(db_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbench.cli", "run", "syscall.getppid", "--duration", "60s", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    time.sleep(3.0)
    proc.send_signal(signal.SIGINT)  # to kbench only: it must forward the interrupt to the probe
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    run = json.loads(stdout)
    assert run["status"] == "interrupted"
    assert run["n"] > 100
    with sqlite3.connect(db_path) as conn:
        status, n, count = conn.execute(
            "select r.status, r.n_samples, s.count from runs r join samples s on s.run_id = r.id "
            "where s.column = 'ticks'"
        ).fetchone()
    assert status == "interrupted"
    assert n == count == run["n"]
