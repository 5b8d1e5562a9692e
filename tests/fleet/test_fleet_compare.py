"""`kbench compare --fleet CLASS`: one comparison sent whole to a worker of CLASS (real Redis,
PostgreSQL and a ``kbench worker --allow-command`` process), its report rendered here.

The sides are ``sleep 0.005`` and ``sleep 0.05`` judged on wall time: 45 ms apart in every
execution, nine times the base. To read "no regression" a loaded machine would have to delay
most of the base's executions by tens of milliseconds in most blocks, while the interleaving puts
both sides in every block; no timing is asserted beyond that verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fleet.conftest import FleetHarness

BASE, NEW = "sleep 0.005", "sleep 0.05"


def test_compare_on_a_fleet_worker_reports_the_verdict_and_stores_its_runs(fleet: FleetHarness,
                                                                          tmp_path: Path) -> None:
    fleet.start_worker("cmp-1", "comparers", "--allow-command")
    proc = fleet.kbench("compare", "--command", BASE, "--command", NEW, "--metric", "wall", "--samples", "2",
                        "--budget", "6s", "--fleet", "comparers", "--json", "--fail-on", "regression",
                        check=False, timeout=300)
    assert proc.returncode == 9, proc.stderr  # --fail-on regression: exit as a local compare
    assert "waiting for a worker of comparers" in proc.stderr and "measured on cmp-1" in proc.stderr
    report = json.loads(proc.stdout)
    verdicts = {m["metric"]: m["verdict"] for m in report["metrics"]}
    assert verdicts["command.wall"] == "regression", report
    assert report["base_label"] and report["new_labels"]
    from sqlalchemy import text

    with fleet.engine.connect() as conn:
        (task,) = [dict(r) for r in conn.execute(text(
            "select kind, state, machine, run_ids, result from fleet_tasks")).mappings()]
    assert (task["kind"], task["state"], task["machine"]) == ("compare-spec", "done", "cmp-1")
    runs = fleet.runs()
    assert runs and {r["id"] for r in runs} == set(task["run_ids"])  # stored by the worker, once each
    assert all("worker:cmp-1" in r["tags"] and "queue:comparers" in r["tags"] for r in runs)
    assert {r["status"] for r in runs} == {"complete"}
    assert {r["params"]["cmd"] for r in runs} == {BASE, NEW}
    # the text report, from the same stored result, without --fail-on: exit 0
    text_proc = fleet.kbench("compare", "--command", BASE, "--command", NEW, "--metric", "wall", "--samples", "2",
                             "--budget", "6s", "--fleet", "comparers", timeout=300)
    assert "regression" in text_proc.stdout
    failing = fleet.kbench("compare", "--command", "false", "--command", "true", "--fleet", "comparers", check=False,
                           timeout=300)
    assert failing.returncode == 12 and "(on cmp-1)" in failing.stderr, failing.stderr  # as a local compare


def test_compare_fleet_refuses_what_a_worker_cannot_have(fleet: FleetHarness, tmp_path: Path) -> None:
    program = tmp_path / "prog"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    refused = fleet.kbench("compare", "--command", str(program), "--command", "true", "--fleet", "comparers",
                           check=False)
    assert refused.returncode == 2 and "a file on this machine" in refused.stderr, refused.stderr
    stored = fleet.kbench("compare", "--runs", "1", "--runs", "2", "--fleet", "comparers", check=False)
    assert stored.returncode == 2 and "stored runs (--runs) are compared here" in stored.stderr
    html = fleet.kbench("compare", "--command", BASE, "--command", NEW, "--fleet", "comparers", "--format", "markdown",
                        "--report-dir", str(tmp_path / "r"), check=False)
    assert html.returncode in (2, 16)  # --report-dir needs [plots] first, then --fleet refuses it
    from sqlalchemy import inspect, text

    if inspect(fleet.engine).has_table("fleet_tasks"):  # nothing sent (refused before the store is opened)
        with fleet.engine.connect() as conn:
            assert conn.execute(text("select count(*) from fleet_tasks")).scalar() == 0
    # accepted, but no worker of the class runs: it says so, and waits (stopped here)
    waiting = subprocess.Popen(
        [sys.executable, "-m", "kbench.cli", "compare", "--command", BASE, "--command", NEW, "--fleet", "nobody"],
        env={**{k: v for k, v in os.environ.items() if k not in ("KBENCH_DB", "KBENCH_BROKER")},
             "KBENCH_FLEET_CONFIG": str(fleet.config)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        assert waiting.stderr is not None
        lines = [waiting.stderr.readline() for _ in range(2)]
    finally:
        waiting.kill()
        waiting.wait()
    assert "waiting for a worker of nobody" in lines[0] and "no machine of class nobody is running" in lines[1]
