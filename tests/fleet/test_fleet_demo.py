"""``kbench fleet demo``: a whole fleet on this machine, and nothing left of it afterwards."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.fleet.conftest import alive, descendants, wait_until

REPO = Path(__file__).resolve().parents[2]


def _demo_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("KBENCH_DB", "KBENCH_BROKER", "KBENCH_FLEET_CONFIG")}


def test_the_demo_runs_a_job_on_its_two_workers_and_stops_everything(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    out = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "fleet", "demo", "--dir", str(workdir),
         "--submit", str(REPO / "examples" / "fleet-six.yaml")],
        capture_output=True, text=True, env=_demo_env(), timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "export KBENCH_FLEET_CONFIG=" in out.stdout
    report = json.loads(out.stdout[out.stdout.index("{"):])
    assert report["state"] == "done" and report["counts"]["done"] == 12
    assert {name: counts["done"] for name, counts in report["machines"].items()} == {"demo-1": 6, "demo-2": 6}
    assert (workdir / "fleet.toml").stat().st_mode & 0o777 == 0o600
    assert "demo-a" in (workdir / "demo-1.log").read_text()
    time.sleep(0.5)
    assert not _processes_mentioning(str(workdir))


def test_kill_9_of_the_demo_leaves_no_server_or_worker(tmp_path: Path) -> None:
    workdir = tmp_path / "demo"
    clusters_before = set(Path(tempfile.gettempdir()).glob("kbench-pg-*"))
    demo = subprocess.Popen([sys.executable, "-m", "kbench.cli", "fleet", "demo", "--dir", str(workdir)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=_demo_env())
    try:
        assert demo.stdout is not None
        for line in demo.stdout:  # the demo is up once it says how to use it
            if b"Ctrl-C stops the demo" in line:
                break
        started = descendants(demo.pid)
        assert len(started) >= 4  # redis, postgres (and its children), two workers (and their pool processes)
        os.kill(demo.pid, signal.SIGKILL)
        demo.wait()
        wait_until(lambda: not any(alive(pid) for pid in started), timeout=90,
                   what="the demo's servers and workers to die with it")
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()
        # Killed, the demo could not remove its PostgreSQL cluster's files (as root they are outside --dir).
        for leftover in set(Path(tempfile.gettempdir()).glob("kbench-pg-*")) - clusters_before:
            shutil.rmtree(leftover, ignore_errors=True)


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
