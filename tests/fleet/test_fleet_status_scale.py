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
from pathlib import Path

from sqlalchemy import update

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
