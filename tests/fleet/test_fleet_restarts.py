"""Redis and PostgreSQL restarted while tasks run: nothing lost, nothing run twice.

A task row tells: ``attempts`` counts the attempts that claimed it (1: it ran once), and the
runs holding its key (``TASK#0``) are the trials stored; a lost or repeated attempt would
leave a second attempt, or a second run (``interrupted``), behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kbench.fleet.services import PostgresServer
from tests.fleet.conftest import FleetHarness, run_harness, wait_until, write_job
from tests.services import running_postgres

FOUR = """\
benchmark: command
params:
  cmd: ["sleep 0.2", "sleep 0.21", "sleep 0.22", "sleep 0.23"]
samples: 10
warmup: 0
"""
"""Four tasks of about 2 s each, nearly all asleep."""


def _running(fleet: FleetHarness, job: str) -> bool:
    return any(t["state"] == "running" and any(r["status"] == "running" for r in fleet.runs_of(t["id"]))
               for t in fleet.tasks(job))


def _each_ran_once(fleet: FleetHarness, job: str) -> None:
    tasks = fleet.tasks(job)
    assert len(tasks) == 4 and {(t["state"], t["attempts"]) for t in tasks} == {("done", 1)}, tasks
    for task in tasks:
        runs = fleet.runs_of(task["id"])
        assert [(r["status"], r["task_key"], r["n_samples"]) for r in runs] == [("complete", f"{task['id']}#0", 10)]
        assert task["run_ids"] == [runs[0]["id"]] and not task["errors"]
    assert len(fleet.runs()) == 4


def test_redis_restarted_while_tasks_run_loses_none_and_runs_none_twice(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file = write_job(tmp_path / "four.yaml", FOUR)
    fleet.start_worker("rr-1", "rr", "--allow-command")
    fleet.start_worker("rr-2", "rr", "--allow-command")
    job = fleet.submit(job_file, "--queue", "rr")
    wait_until(lambda: _running(fleet, job), what="a run to start")
    fleet.stop_broker()  # mid-run: the messages in hand are not acknowledged yet, the others wait in Redis
    wait_until(lambda: any(t["state"] == "done" for t in fleet.tasks(job)), what="a task to end without Redis")
    fleet.start_broker()
    assert fleet.wait_job(job) == "done"
    _each_ran_once(fleet, job)
    assert all(w.process.poll() is None for w in fleet.workers.values())
    wait_until(lambda: fleet.queue_length("rr") == 0, what="the queue to be empty")


@pytest.fixture
def fleet_on_own_postgres(tmp_path: Path) -> Iterator[tuple[FleetHarness, PostgresServer]]:
    with running_postgres(tmp_path / "pg") as server:
        yield from ((harness, server) for harness in run_harness(tmp_path / "fleet", server.url))


def test_postgresql_restarted_while_tasks_run_stores_every_run_once(
    fleet_on_own_postgres: tuple[FleetHarness, PostgresServer], tmp_path: Path,
) -> None:
    fleet, server = fleet_on_own_postgres
    job_file = write_job(tmp_path / "four.yaml", FOUR)
    fleet.start_worker("pr-1", "pr", "--allow-command")
    fleet.start_worker("pr-2", "pr", "--allow-command")
    job = fleet.submit(job_file, "--queue", "pr")
    wait_until(lambda: _running(fleet, job), what="a run to start")
    fleet.engine.dispose()
    server.stop()  # a restart: every connection of the workers is cut
    server.start()
    assert fleet.wait_job(job) == "done"
    _each_ran_once(fleet, job)
    assert all(w.process.poll() is None for w in fleet.workers.values())  # they reconnected
    for worker in fleet.workers.values():
        log = fleet.log_tail(worker, 10**6)
        assert "Traceback" not in log, log[-3000:]
