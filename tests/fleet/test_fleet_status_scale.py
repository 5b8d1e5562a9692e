"""`kbench fleet status` on a job of a few hundred tasks: the counts are the tasks' states
(aggregated in SQL), and a long job lists the tasks that need a look first, up to ``--tasks``.

The speed with 10,000 tasks is measured in benchmarks/fleet_scale.py, not asserted here."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select, update

from kbench.fleet.database import open_fleet_store
from kbench.fleet.demo import write_config
from kbench.fleet.settings import FleetTiming
from kbench.store import schema
from kbench.store.fleet import ATTENTION_ORDER, FleetStore, PlannedTask

N_TASKS = 300
STATES = {"done": 200, "queued": 60, "running": 25, "failed": 10, "cancelled": 5}


def _kbench(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KBENCH_FLEET_CONFIG": str(config), "COLUMNS": "200"}
    env.pop("KBENCH_DB", None)
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_status_counts_and_the_tasks_listed_first_with_300_tasks(private_postgres_url: str, tmp_path: Path) -> None:
    fleet = FleetStore(open_fleet_store(private_postgres_url), lease_s=30)
    queues = ["a", "b", "c"]
    tasks = [PlannedTask(id=uuid.uuid4().hex, queue=queues[i % 3], kind="instance", instance_ids=("0123456789ab",),
                         label="syscall.getppid", repeat_index=i // 3) for i in range(N_TASKS)]
    fleet.create_job(job_id="scale0000001", name="many.yaml", job_text="benchmark: syscall.getppid\n",
                     queues=queues, repeat=N_TASKS // 3, compare=None, submitted_by="me", tasks=tasks)
    states = [state for state, n in STATES.items() for _ in range(n)]
    t = schema.fleet_tasks
    with fleet.engine.begin() as conn:
        for index, (task, state) in enumerate(zip(tasks, states, strict=True)):
            machine = f"m-{index % 4}" if state != "queued" else None
            conn.execute(update(t).where(t.c.id == task.id).values(state=state, machine=machine))
    expected_by_machine: dict[str, Counter[str]] = {}
    for index, state in enumerate(states):
        if state != "queued":
            expected_by_machine.setdefault(f"m-{index % 4}", Counter())[state] += 1

    (job,) = fleet.jobs(job_id="scale0000001")
    assert job["counts"] == STATES
    assert {m: {s: n for s, n in c.items() if n} for m, c in job["machines"].items()} == expected_by_machine
    assert sum(sum(c.values()) for c in job["queues_state"].values()) == N_TASKS

    first = fleet.tasks("scale0000001", limit=50)
    ranks = [ATTENTION_ORDER.index(task["state"]) for task in first]
    assert len(first) == 50 and ranks == sorted(ranks)
    assert Counter(task["state"] for task in first) == {"running": 25, "failed": 10, "queued": 15}
    assert len(fleet.tasks("scale0000001")) == N_TASKS
    fleet.engine.dispose()

    config = tmp_path / "fleet.toml"
    write_config(config, db=private_postgres_url, broker="redis://127.0.0.1:9/0", timing=FleetTiming())
    listed = json.loads(_kbench(config, "fleet", "status", "scale0000001", "--json", "--tasks", "40").stdout)
    assert listed["job"]["counts"] == STATES and listed["tasks_left_out"] == N_TASKS - 40
    assert [task["state"] for task in listed["tasks"]] == ["running"] * 25 + ["failed"] * 10 + ["queued"] * 5
    every = json.loads(_kbench(config, "fleet", "status", "scale0000001", "--json", "--tasks", "0").stdout)
    assert len(every["tasks"]) == N_TASKS and every["tasks_left_out"] == 0
    text = _kbench(config, "fleet", "status", "scale0000001").stdout
    assert "100 of 300 tasks listed, those that need a look first" in text
    assert "--tasks 0` lists every task" in text
    rows = [line.split() for line in text.splitlines() if re.match(r"[0-9a-f]{12}  ", line)]
    assert len(rows) == 100
    assert Counter(row[4] for row in rows) == {"running": 25, "failed": 10, "queued": 60, "cancelled": 5}
    summary = _kbench(config, "fleet", "status").stdout.splitlines()
    assert summary[1].split()[:8] == ["scale0000001", "many.yaml", "running", "60", "25", "200", "10", "5"]


class _Refused(RuntimeError):
    def __init__(self, sent: list[tuple[str, datetime]]):
        super().__init__("the broker went away")
        self.sent = sent


def test_tasks_never_sent_are_sent_by_one_worker_and_not_while_their_submitter_sends(
    private_postgres_url: str,
) -> None:
    """A long job takes longer to send than a lease: the workers send again only what its
    submitter left unsent for a lease, one worker at a time (at 10,000 tasks every heartbeat of
    every worker used to send the whole job again)."""
    fleet = FleetStore(open_fleet_store(private_postgres_url), lease_s=30)
    tasks = [PlannedTask(id=f"{i:032x}", queue="q", kind="instance", instance_ids=("0123456789ab",),
                         label="syscall.getppid", repeat_index=i) for i in range(6)]
    fleet.create_job(job_id="send00000001", name="j.yaml", job_text="benchmark: syscall.getppid\n", queues=["q"],
                     repeat=6, compare=None, submitted_by="me", tasks=tasks)
    t = schema.fleet_tasks
    with fleet.engine.begin() as conn:
        conn.execute(update(t).values(created_at=func.now() - timedelta(hours=1)))
    now = datetime.now(UTC)
    fleet.mark_published([(tasks[0].id, now)])  # the submitter is still sending this job
    calls: list[list[tuple[str, str]]] = []

    def send(batch: list[tuple[str, str]]) -> list[tuple[str, datetime]]:
        calls.append(batch)
        return [(task_id, now) for task_id, _ in batch]

    assert fleet.send_unpublished(fleet.lease, send) == [] and calls == []
    fleet.mark_published([(tasks[0].id, now - timedelta(minutes=5))])  # ... and stopped 5 minutes ago

    def send_while_another_worker_looks(batch: list[tuple[str, str]]) -> list[tuple[str, datetime]]:
        assert fleet.send_unpublished(fleet.lease, send) == []  # the rows are locked: it sends nothing
        earlier = now - timedelta(minutes=5)  # (sent now, they would hold the rest back for a lease)
        raise _Refused([(batch[0][0], earlier), (batch[1][0], earlier)])

    with pytest.raises(_Refused):
        fleet.send_unpublished(fleet.lease, send_while_another_worker_looks)
    assert calls == []
    sent = fleet.send_unpublished(fleet.lease, send)  # the two sent before the failure are not sent again
    assert [task_id for task_id, _ in sent] == [task.id for task in tasks[3:]]
    assert fleet.send_unpublished(fleet.lease, send) == [] and len(calls) == 1
    with fleet.engine.connect() as conn:
        assert conn.execute(select(func.count()).where(t.c.published_at.is_(None))).scalar() == 0
    fleet.engine.dispose()
