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

from kbench.contract.spill import SPILL_SUFFIX, spill_head


def _wait_for_child(pid: int, name: str, timeout: float) -> None:
    """Wait until process ``pid`` has a child called ``name`` (read from /proc)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for children in Path(f"/proc/{pid}/task").glob("*/children"):
            for child in children.read_text().split():
                comm = Path(f"/proc/{child}/comm")
                if comm.exists() and comm.read_text().strip() == name:
                    return
        time.sleep(0.05)
    raise AssertionError(f"{name} did not start within {timeout} s")


def _wait_for_spilled_samples(directory: Path, least: int, timeout: float) -> None:
    """Wait until the run's spill (streamed by the probe at least once a second) holds more than
    ``least`` samples: on a busy machine a fixed second of sleep saw none taken yet."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for path in directory.rglob(f"*{SPILL_SUFFIX}"):
            head = spill_head(path)
            if head is not None and head.rows > least:
                return
        time.sleep(0.05)
    raise AssertionError(f"the probe spilled no more than {least} samples within {timeout} s")


def test_sigint_keeps_finished_samples(db_path: Path) -> None:
    env = dict(os.environ, KBENCH_DB=str(db_path))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kbench.cli", "run", "syscall.getppid", "--duration", "60s", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )
    _wait_for_child(proc.pid, "kbench-probe", timeout=60)
    _wait_for_spilled_samples(db_path.parent, least=100, timeout=60)  # the probe has taken samples
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
