"""Two stores never share a workspace: bisections and watches side by side, each names its own culprit.

Before, a bisection's worktrees were ``$XDG_CACHE_HOME/kbench/bisect/<id>`` and every store counts
its bisections from 1: two bisections on two stores shared one directory, the first to finish
removed it, and the other timed its failing commands at 0.6 ms (a wrong culprit, once
``confirmed: true``). Here every process shares one cache directory, as on a user's machine,
and nothing passes ``--workdir``.

The planted commits add 20 % work to a 15-25 ms loop, judged on CPU time: the driver's
simulation (benchmarks/bisect_rounds.py) names a 5 % culprit in 300 of 300 bisections, and
20 % is 10+ spreads of the trials, so a wrong culprit here is a defect, not bad luck.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kbench.bisect.demo import BUILD, COMMAND, make_demo_repo

pytestmark = pytest.mark.skipif(not (shutil.which("git") and shutil.which("cc")), reason="needs git and cc")

MEASURE = ("--build", BUILD, "--command", COMMAND, "--samples", "10", "--metric", "cpu")
JOB = "benchmark: command\nparams:\n  cmd: ./prog\nsamples: 10\niterations: 3\n"


def _env(cache: Path, db: Path) -> dict[str, str]:
    return dict(os.environ, KBENCH_DB=str(db), KBENCH_CACHE_DIR=str(cache), COLUMNS="120")


def _start(cache: Path, db: Path, repo: Path, good: str, log: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kbench.cli", "bisect", "start", "--repo", str(repo), "--good", good, "--bad", "main",
         *MEASURE, "--json"],
        env=_env(cache, db), stdout=subprocess.PIPE, stderr=log.open("w"), text=True)


def _kbench(cache: Path, db: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kbench.cli", *args], env=_env(cache, db), capture_output=True,
                          text=True, timeout=timeout)


def _finished(proc: subprocess.Popen[str], log: Path, timeout: float = 600) -> dict[str, Any]:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}:\n{log.read_text()}"
    return dict(json.loads(out))


def _named(report: dict[str, Any], culprit: str, log: Path) -> None:
    assert report["status"] == "done", log.read_text()
    assert report["first_bad"] is not None and report["first_bad"]["sha"] == culprit, log.read_text()
    assert report["confirmed"] is True
    assert not [s for s in report["steps"] if s["verdict"] == "skip"], log.read_text()


def _trials_are_real(db: Path, *, killed: bool = False) -> None:
    """Every trial ran the program: none failed, and none is far below the others in CPU time (a 0.6 ms
    'trial' of a command that did not run). ``killed``: the run measured at a kill -9 is ``abandoned``.
    The samples are decoded here (zlib, little-endian u64)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        statuses = dict(conn.execute("select id, status from runs"))
        columns: dict[int, dict[str, np.ndarray]] = {}
        for run_id, column, dtype, data in conn.execute(
                "select run_id, \"column\", dtype, data from samples where \"column\" in ('utime_ns', 'stime_ns')"):
            if statuses[run_id] == "complete":
                columns.setdefault(run_id, {})[column] = np.frombuffer(zlib.decompress(data), dtype=dtype)
    allowed = {"complete", "abandoned"} if killed else {"complete"}
    assert statuses and set(statuses.values()) <= allowed, statuses
    assert list(statuses.values()).count("abandoned") <= 1, statuses
    medians = sorted(float(np.median(c["utime_ns"] + c["stime_ns"])) for c in columns.values())
    assert medians and medians[0] > 0.5 * medians[len(medians) // 2], medians


def _saved_steps(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute("select steps from bisections order by id desc limit 1").fetchone()
    except sqlite3.OperationalError:
        return 0
    return len(json.loads(row[0])) if row else 0


def test_two_bisections_on_two_stores_at_once_each_name_their_own_culprit(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    for trial in range(2):
        runs = []
        for name, culprit in (("a", 5), ("b", 3)):
            repo = tmp_path / f"{trial}{name}"
            shas = make_demo_repo(repo, commits=8, culprit=culprit, broken=None, extra=0.2)
            db, log = tmp_path / f"{trial}{name}.db", tmp_path / f"{trial}{name}.log"
            runs.append((_start(cache, db, repo, shas[0], log), shas[culprit], db, log))
            time.sleep(5)  # the second starts while the first measures its check
        for proc, culprit, db, log in runs:
            _named(_finished(proc, log), culprit, log)
            _trials_are_real(db)
    leftovers = [p for p in (cache / "bisect").rglob("*") if p.is_file()]
    assert leftovers == []  # worktrees and lock files removed by their holders


def test_a_busy_workspace_is_refused_and_a_killed_bisection_leaves_the_other_going(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    repo_a, repo_b = tmp_path / "a", tmp_path / "b"
    shas_a = make_demo_repo(repo_a, commits=8, culprit=5, broken=None, extra=0.2)
    shas_b = make_demo_repo(repo_b, commits=8, culprit=3, broken=None, extra=0.2)
    db_a, db_b = tmp_path / "a.db", tmp_path / "b.db"
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    first = _start(cache, db_a, repo_a, shas_a[0], log_a)
    other = _start(cache, db_b, repo_b, shas_b[0], log_b)
    try:
        deadline = time.monotonic() + 300
        while _saved_steps(db_a) < 1:
            assert first.poll() is None and time.monotonic() < deadline, log_a.read_text()
            time.sleep(0.5)
        # The same bisection from a second process: refused, and nothing of it changes.
        resumed = _kbench(cache, db_a, "bisect", "resume", "1")
        assert resumed.returncode == 2, resumed.stderr
        assert "bisection 1 is in use by another kbench (pid" in resumed.stderr
        reset = _kbench(cache, db_a, "bisect", "reset", "1")
        assert reset.returncode == 2 and "is in use by another kbench" in reset.stderr
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    _named(_finished(other, log_b), shas_b[3], log_b)
    # The killed one goes on where it stopped, in its own workspace.
    again = _kbench(cache, db_a, "bisect", "resume", "1", "--json")
    assert again.returncode == 0, again.stderr
    _named(json.loads(again.stdout), shas_a[5], log_a)
    _trials_are_real(db_a, killed=True)
    _trials_are_real(db_b)


def test_watches_on_two_stores_and_a_bisection_beside_one_of_them(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    procs = []
    for name in ("a", "b"):
        repo = tmp_path / f"watched-{name}"
        make_demo_repo(repo, commits=4, culprit=None, broken=None, extra=0.0)
        log = tmp_path / f"watch-{name}.log"
        procs.append((subprocess.Popen(
            [sys.executable, "-m", "kbench.cli", "watch", str(repo), "--build", BUILD, "--job", str(job), "--once",
             "--json", "--from", "HEAD~3", "--budget", "10s", "--outbox", str(tmp_path / f"out-{name}")],
            env=_env(cache, tmp_path / f"{name}.db"), stdout=subprocess.PIPE, stderr=log.open("w"), text=True), log))
    bisected = tmp_path / "bisected"
    shas = make_demo_repo(bisected, commits=8, culprit=5, broken=None, extra=0.2)
    bisect_log = tmp_path / "bisect.log"
    bisection = _start(cache, tmp_path / "a.db", bisected, shas[0], bisect_log)
    for proc, log in procs:
        out, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, log.read_text()
        polled = json.loads(out)
        assert [c["state"] for c in polled["commits"]] == ["measured"] * 4, log.read_text()
    _named(_finished(bisection, bisect_log, timeout=900), shas[5], bisect_log)
    _trials_are_real(tmp_path / "b.db")
