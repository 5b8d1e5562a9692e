"""Failover with the default timing: a worker killed with -9 mid-task is found dead from its
missed heartbeats and its task runs elsewhere within about 10 s, and neither `fleet status`
nor `fleet machines` keeps showing the dead machine at work."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbench.fleet.settings import FleetTiming
from kbench.store.fleet import FleetStore
from tests.fleet.conftest import FleetHarness, run_harness, wait_until, write_job

DEFAULT = FleetTiming()
LONG_COMMAND = """\
benchmark: command
params:
  cmd: "sleep 0.5"
samples: 16
warmup: 0
"""
"""About 8 s per run, asleep: still running when the worker is killed."""
FAILOVER_BOUND_S = 30.0
"""The default lease (10 s) plus a heartbeat (2 s) is when a live worker queues the task again;
30 s leaves the loaded machine room and is still half of the old 60 s lease."""


@pytest.fixture
def default_fleet(tmp_path: Path, private_postgres_url: str) -> Iterator[FleetHarness]:
    yield from run_harness(tmp_path, private_postgres_url, DEFAULT)


def _task(fleet: FleetHarness, job_id: str) -> dict:
    """The job's task as `kbench fleet status JOB --json` reads it (FleetStore.tasks, in-process:
    a CLI start takes seconds on a loaded machine, longer than the moments polled for)."""
    (task,) = FleetStore(fleet.engine, lease_s=DEFAULT.lease_s).tasks(job_id)
    return task


def _machine(fleet: FleetHarness, name: str) -> dict:
    """A machine as `kbench fleet machines` reads it (FleetStore.machines, in-process)."""
    return next(m for m in FleetStore(fleet.engine, lease_s=DEFAULT.lease_s).machines() if m["name"] == name)


def test_the_defaults_find_a_dead_worker_from_its_missed_heartbeats_in_about_10_s(
    default_fleet: FleetHarness, tmp_path: Path,
) -> None:
    fleet = default_fleet
    assert (DEFAULT.heartbeat_s, DEFAULT.lease_s) == (2.0, 10.0)
    first = fleet.start_worker("d-1", "d", "--allow-command", wait=False)
    second = fleet.start_worker("d-2", "d", "--allow-command", wait=False)
    for worker in (first, second):
        fleet.wait_registered(worker)
    job = fleet.submit(write_job(tmp_path / "long.yaml", LONG_COMMAND), "--queue", "d")
    running = wait_until(lambda: (t := _task(fleet, job))["state"] == "running" and t["machine"] and t,
                         what="the task to start")
    victim = first if running["machine"] == first.name else second
    survivor = second if victim is first else first
    wait_until(lambda: _machine(fleet, victim.name)["current_task"] == running["id"],
               what="the worker's heartbeat to name its task")
    wait_until(lambda: any(r["status"] == "running" for r in fleet.runs_of(running["id"])), what="the run to start")

    fleet.kill9(victim)
    killed_at = time.monotonic()
    moved = wait_until(lambda: (t := _task(fleet, job))["machine"] == survivor.name and t["attempts"] == 2 and t,
                       timeout=FAILOVER_BOUND_S, what="the task to run on the surviving worker", poll=0.5)
    took = time.monotonic() - killed_at
    assert moved["state"] in ("running", "done") and not moved["lost"]
    assert victim.name in moved["errors"][0]["error"] and "lost" in moved["errors"][0]["error"]
    dead = _machine(fleet, victim.name)
    assert dead["state"] == "offline" and dead["current_task"] is None and dead["job"] is None
    shown = json.loads(fleet.kbench("fleet", "machines", "--json").stdout)["machines"]
    assert [(m["state"], m["current_task"]) for m in shown if m["name"] == victim.name] == [("offline", None)]
    wait_until(lambda: _machine(fleet, survivor.name)["current_task"] == running["id"]
               or _task(fleet, job)["state"] == "done", what="the survivor's heartbeat to name its task")
    print(f"task queued again and taken by {survivor.name} {took:.1f} s after kill -9")

    assert fleet.wait_job(job) == "done"
    runs = fleet.runs_of(running["id"])
    assert sorted(r["status"] for r in runs) == ["complete", "interrupted"]
