"""`kbench bisect start --fleet CLASS`: a bisection whose build checks and rounds are fleet tasks
of two workers (real Redis, PostgreSQL and ``kbench worker --allow-command`` processes); the
demo repository's commit 5 adds 30 % work to the program's loop, and a commit that does not
build is skipped, as on one machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import text

from kbench.bisect.demo import BUILD, COMMAND, make_demo_repo
from tests.fleet.conftest import FleetHarness, wait_until

pytestmark = pytest.mark.skipif(not (shutil.which("git") and shutil.which("cc")), reason="needs git and cc")
CULPRIT, BROKEN = 5, 3


def test_a_bisection_on_two_fleet_workers_names_the_culprit(fleet: FleetHarness, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shas = make_demo_repo(repo, commits=9, culprit=CULPRIT, broken=BROKEN, extra=0.3)
    fleet.start_worker("bis-1", "bisectors", "--allow-command")
    fleet.start_worker("bis-2", "bisectors", "--allow-command")
    # started, killed (-9) once its first step is saved, then resumed: the steps go on through fleet tasks
    started = subprocess.Popen(
        [sys.executable, "-m", "kbench.cli", "bisect", "start", "--repo", str(repo), "--good", shas[0],
         "--bad", shas[-1], "--build", BUILD, "--command", COMMAND, "--samples", "10", "--metric", "cpu",
         "--fleet", "bisectors", "--json"],
        env=_env(fleet), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: _saved_steps(fleet) >= 1, timeout=600, what="the bisection's first step")
    finally:
        started.kill()
        started.wait()
    with fleet.engine.connect() as conn:
        status, steps = conn.execute(text("select status, steps from bisections where id = 1")).one()
    assert status == "running"
    local = fleet.kbench("--db", f"sqlite:///{fleet.workdir / 'elsewhere.db'}", "bisect", "resume", "1", check=False)
    assert local.returncode == 4  # not in a local store
    proc = fleet.kbench("bisect", "resume", "--fleet", "bisectors", "1", "--json", timeout=900)
    report = json.loads(proc.stdout)
    assert len(report["steps"]) > len(steps)  # the resumed run went on
    assert report["status"] == "done" and report["first_bad"]["sha"] == shas[CULPRIT], proc.stderr
    skipped = [step["commit"] for step in report["steps"] if step["verdict"] == "skip"]
    assert skipped in ([], [shas[BROKEN]])  # skipped when the search lands on it
    with fleet.engine.connect() as conn:
        tasks = [dict(r) for r in conn.execute(text(
            "select kind, state, machine, run_ids, spec from fleet_tasks order by created_at")).mappings()]
        good, bad = conn.execute(text("select good, bad from bisections where id = :i"), {"i": report["id"]}).one()
    assert (good, bad) == (shas[0], shas[-1])
    rounds = [t for t in tasks if t["kind"] == "watch-round"]
    assert rounds and {t["state"] for t in rounds} == {"done"}
    assert {t["machine"] for t in tasks} <= {"bis-1", "bis-2"}
    # a round measures its commits on one machine, interleaved: the check good and bad, each search step
    # the commit, good and bad; at the end the culprit and its parent
    assert set(rounds[0]["spec"]["commits"]) == {good, bad}
    steps = [t for t in rounds if len(t["spec"]["commits"]) == 3]
    assert steps and all(set(t["spec"]["commits"]) >= {good, bad} for t in steps)
    assert any(shas[CULPRIT] in t["spec"]["commits"] for t in rounds)
    runs = fleet.runs()
    assert runs and all(f"bisect:{report['id']}" in r["tags"] for r in runs)
    assert {r["id"] for r in runs} == {i for t in tasks for i in t["run_ids"]}  # stored by the workers, once
    refused = fleet.kbench("bisect", "start", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1],
                           "--build", BUILD, "--command", COMMAND, "--fleet", "bisectors",
                           "--fleet-repo", "https://me:secret@git.example.org/demo.git", check=False)
    assert refused.returncode == 2 and "https://git.example.org/demo.git" in refused.stderr


def _env(fleet: FleetHarness) -> dict[str, str]:
    environment = {**os.environ, "KBENCH_FLEET_CONFIG": str(fleet.config)}
    for variable in ("KBENCH_DB", "KBENCH_BROKER"):
        environment.pop(variable, None)
    return environment


def _saved_steps(fleet: FleetHarness) -> int:
    with fleet.engine.connect() as conn:
        steps = conn.execute(text("select steps from bisections where id = 1")).scalar()
    return len(steps or [])
