"""``kbench fleet demo``: a whole fleet on this machine, and nothing left of it afterwards."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.fleet.conftest import alive, descendants, wait_until

REPO = Path(__file__).resolve().parents[2]


def _demo_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("KBENCH_DB", "KBENCH_BROKER", "KBENCH_FLEET_CONFIG")}


def test_the_demo_runs_a_job_on_its_two_workers_and_stops_everything(tmp_path: Path, scratch: Path) -> None:
    """In a directory given relative to the current one (redis-server and PostgreSQL run
    elsewhere), submitting to the demo's own database even with $KBENCH_DB set, and
    leaving nothing in $TMPDIR."""
    elsewhere = tmp_path / "elsewhere.db"
    out = subprocess.run(
        [sys.executable, "-m", "kbench.cli", "fleet", "demo", "--dir", "demo",
         "--submit", str(REPO / "examples" / "fleet-six.yaml")],
        capture_output=True, text=True, env={**_demo_env(), "KBENCH_DB": str(elsewhere), "TMPDIR": str(scratch)},
        timeout=600, cwd=tmp_path,
    )
    workdir = tmp_path / "demo"
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "export KBENCH_FLEET_CONFIG=" in out.stdout
    report = json.loads(out.stdout[out.stdout.index("{"):])
    assert report["state"] == "done" and report["counts"]["done"] == 12
    assert {name: counts["done"] for name, counts in report["machines"].items()} == {"demo-1": 6, "demo-2": 6}
    assert (workdir / "fleet.toml").stat().st_mode & 0o777 == 0o600
    assert "demo-a" in (workdir / "demo-1.log").read_text()
    assert (workdir / "redis" / "redis.log").is_file()
    assert not elsewhere.exists()  # the job went to the demo's PostgreSQL, not to $KBENCH_DB
    assert list(scratch.iterdir()) == []
    time.sleep(0.5)
    assert not _processes_mentioning(str(workdir))


def test_kill_9_of_the_demo_leaves_no_server_or_worker_and_no_files(scratch: Path) -> None:
    """Without --dir everything is in temp dirs (the PostgreSQL cluster in one of its own as
    root): after kill -9 the guardian removes them (main left 50 MB of cluster and two dirs)."""
    demo = subprocess.Popen([sys.executable, "-m", "kbench.cli", "fleet", "demo"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**_demo_env(), "TMPDIR": str(scratch)})
    try:
        assert demo.stdout is not None
        for line in demo.stdout:  # the demo is up once it says how to use it
            if b"Ctrl-C stops the demo" in line:
                break
        started = descendants(demo.pid)
        assert len(started) >= 4  # redis, postgres (and its children), two workers (and their pool processes)
        assert len(list(scratch.iterdir())) >= 1
        os.kill(demo.pid, signal.SIGKILL)
        demo.wait()
        wait_until(lambda: not any(alive(pid) for pid in started), timeout=90,
                   what="the demo's servers and workers to die with it")
        wait_until(lambda: not list(scratch.iterdir()), timeout=90, what="the demo's temp dirs to be removed")
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait()


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
