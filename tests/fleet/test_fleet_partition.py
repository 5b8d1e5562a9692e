"""A worker cut from the network mid-task, then rejoining: its task runs again elsewhere, and
its late result is refused by attempt id (fencing), so the trial is stored complete once.

Two isolated workers of one class (``kbench fleet demo --isolated``'s: network and mount
namespaces of their own, the demo's timing: heartbeat 1 s, lease 10 s). The worker that
takes the task has its only link set down inside its namespace for ``PARTITION_S``. The
issue asks for 30 s; CI uses 20 s, the same logic (anything comfortably longer than the
lease plus a heartbeat): ``KBENCH_TEST_PARTITION_S=30`` runs the issue's figure
(docs/PERFORMANCE.md).
"""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import pytest

from kbench.fleet.demo import DEMO_TIMING, DemoWorker, LocalFleet
from kbench.fleet.run_store import LOST_LEASE
from kbench.fleet.settings import load_settings
from kbench.fleet.submit import submit_job
from kbench.store.fleet import FleetStore
from tests.fleet.conftest import wait_until, write_job

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="network namespaces need root and iproute2")

PARTITION_S = float(os.environ.get("KBENCH_TEST_PARTITION_S", "20"))
JOB = """\
benchmark: command
params:
  cmd: "sleep 0.25"
samples: 32
warmup: 0
"""
"""About 8 s per run, asleep: the run is still being measured when its worker is cut off."""


def test_a_partitioned_worker_loses_its_task_and_its_late_result_is_fenced_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    with LocalFleet(tmp_path / "fleet", classes=("p", "p"), isolated=True) as fleet:
        monkeypatch.setenv("KBENCH_FLEET_CONFIG", str(fleet.config))
        settings = load_settings(db=fleet.db_url, broker=fleet.broker_url)
        submission = submit_job(settings, write_job(tmp_path / "sleepy.yaml", JOB), queues=["p"], repeat=1,
                                compare=None, cpu_count=1)
        from kbench.fleet.database import open_fleet_store

        store = FleetStore(open_fleet_store(fleet.db_url), lease_s=DEMO_TIMING.lease_s)
        (task_id,) = [task.id for task in submission.tasks]

        def task() -> dict:
            return next(t for t in store.tasks(submission.job_id) if t["id"] == task_id)

        running = wait_until(lambda: (t := task())["state"] == "running" and t["machine"] and t,
                             what="the task to start")
        wait_until(lambda: any(r["status"] == "running" for r in store.task_runs(task_id)), what="its run to start")
        victim: DemoWorker = next(w for w in fleet.workers if w.name == running["machine"])
        survivor = next(w for w in fleet.workers if w is not victim)
        assert victim.namespace is not None

        victim.namespace.set_link(up=False)
        cut_at = time.monotonic()
        moved = wait_until(lambda: (t := task())["attempts"] == 2 and t["machine"] == survivor.name and t,
                           timeout=PARTITION_S, what="the task to be queued again and taken by the other worker",
                           poll=0.25)
        requeued_s = time.monotonic() - cut_at
        assert victim.name in moved["errors"][0]["error"] and "lost" in moved["errors"][0]["error"]
        time.sleep(max(0.0, cut_at + PARTITION_S - time.monotonic()))
        victim.namespace.set_link(up=True)
        rejoined_at = time.monotonic()
        print(f"partition {PARTITION_S:.0f} s: task taken by {survivor.name} {requeued_s:.1f} s after the cut")

        wait_until(lambda: task()["state"] == "done", timeout=180, what="the task to be done")
        fenced = wait_until(
            lambda: re.search(rf"task {task_id}: the result of attempt 1 refused \(fencing\)",
                              victim.log.read_text(errors="replace")),
            timeout=180, what="the partitioned worker's late result to arrive and be refused")
        print(f"late result refused {time.monotonic() - rejoined_at:.1f} s after the link came back up")
        assert fenced
        # ... and then may not end the task (logged a moment after the run is stored).
        wait_until(lambda: re.search(rf"task {task_id}: attempt 1 refused \(fencing\)",
                                     victim.log.read_text(errors="replace")),
                   timeout=60, what="the partitioned worker's attempt to be refused the task's end")

        done = task()
        runs = store.task_runs(task_id)
        assert sorted(r["status"] for r in runs) == ["complete", "interrupted"], runs
        (complete,) = [r for r in runs if r["status"] == "complete"]
        (late,) = [r for r in runs if r["status"] == "interrupted"]
        assert done["run_ids"] == [complete["id"]] and done["machine"] == survivor.name
        assert late["error"] == LOST_LEASE and late["task_key"] == f"{task_id}#0~{late['id']}"
        assert store.stored_trials(task_id) == {0: complete["id"]}
        # The partitioned worker rejoined: it is an idle machine of the fleet again.
        wait_until(lambda: next(m for m in store.machines() if m["name"] == victim.name)["state"] == "idle",
                   timeout=60, what="the partitioned worker to be idle again")
        store.engine.dispose()
