"""A run whose kbench is gone reads as ``abandoned`` at once (issue 27, item 4), judged by
``store.liveness`` on a real SQLite file and a real PostgreSQL server:

- a run of this host by its owner's pid (the pid of a process that has exited);
- a run of another host by its heartbeat, renewed by the kbench measuring it;
- a fleet trial by its task's lease.

``results`` and ``show`` (read-only, through the command) and the dashboard (a real
``kbench serve``) show the verdict; a writing open stores it. Times are put in the
database with the database's own clock, as the code under test reads them.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, text, update

from kbench.procfs import is_living
from kbench.store import schema
from kbench.store.db import Store
from kbench.store.liveness import RUN_LEASE_S
from kbench.store.owners import boot_id, owner_gone
from tests.services import LOOPBACK, free_port, wait_for_port


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'k.db'}"
    return str(request.getfixturevalue("private_postgres_url"))


def _begin(store: Store, **overrides: object) -> int:
    return store.begin_run(benchmark="syscall.getppid", metric="syscall.getppid.latency", unit="ns",
                           direction="lower", params={}, request={}, sysinfo=None, target=None,
                           **overrides)  # type: ignore[arg-type]


def _seconds_ago(store: Store, seconds: float) -> datetime:
    """The database's clock, ``seconds`` ago."""
    with store.engine.connect() as conn:
        now = conn.execute(text("SELECT CURRENT_TIMESTAMP")).scalar_one()
    now = datetime.fromisoformat(now) if isinstance(now, str) else now
    return (now if now.tzinfo else now.replace(tzinfo=UTC)) - timedelta(seconds=seconds)


def _owned_by(store: Store, run_id: int, *, host: str, beat_seconds_ago: float | None = None) -> None:
    values: dict[str, object] = {"owner_host": host}
    if beat_seconds_ago is not None:
        values["heartbeat_at"] = _seconds_ago(store, beat_seconds_ago)
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(**values))


def _status(url: str, run_id: int, *, read_only: bool = True) -> str:
    return Store.open(url, read_only=read_only).get_run(run_id).status


def test_another_hosts_run_is_abandoned_once_its_heartbeat_is_older_than_the_lease(url: str) -> None:
    store = Store.open(url)
    stale, fresh, legacy = _begin(store), _begin(store), _begin(store)
    _owned_by(store, stale, host="elsewhere", beat_seconds_ago=RUN_LEASE_S + 30)
    _owned_by(store, fresh, host="elsewhere", beat_seconds_ago=2)
    _owned_by(store, legacy, host="elsewhere")
    with store.engine.begin() as conn:  # written by a kbench before heartbeats: never judged from afar
        conn.execute(update(schema.runs).where(schema.runs.c.id == legacy).values(heartbeat_at=None))
    reader = Store.open(url, read_only=True)
    shown = {row["id"]: row["status"] for row in reader.list_runs()}
    assert shown == {stale: "abandoned", fresh: "running", legacy: "running"}
    record = reader.get_run(stale)
    assert record.error is not None and "heartbeat stopped" in record.error and "on elsewhere" in record.error
    assert Store.open(url).get_run(stale).status == "abandoned"  # a writing open stores it ...
    assert _stored_status(store, stale) == "abandoned" and _stored_status(store, fresh) == "running"


def test_a_fleet_trial_is_abandoned_once_its_tasks_lease_ended(url: str) -> None:
    store = Store.open(url)
    _task(store, "t-lost", lease_seconds_from_now=-30)
    _task(store, "t-held", lease_seconds_from_now=300)
    _task(store, "t-done", lease_seconds_from_now=300, state="done")
    lost, held, done = (_begin(store, task_key=f"{task}#0") for task in ("t-lost", "t-held", "t-done"))
    for run_id in (lost, held, done):  # measured by a worker of another host, beating
        _owned_by(store, run_id, host="worker-7", beat_seconds_ago=1)
    reader = Store.open(url, read_only=True)
    assert {r["id"]: r["status"] for r in reader.list_runs()} == {lost: "abandoned", held: "running",
                                                                  done: "abandoned"}
    error = reader.get_run(lost).error
    assert error is not None and "lease ended" in error
    Store.open(url)
    assert [_stored_status(store, r) for r in (lost, held, done)] == ["abandoned", "running", "abandoned"]


def test_the_kbench_measuring_a_run_renews_its_heartbeat_until_it_ends(url: str) -> None:
    store = Store.open(url)
    store._heartbeat.period_s = 0.2
    run_id = _begin(store)
    first = _heartbeat_at(store, run_id)
    deadline = time.monotonic() + 30
    while _heartbeat_at(store, run_id) <= first:  # SQLite's clock has whole seconds
        assert time.monotonic() < deadline, "the heartbeat was not renewed"
        time.sleep(0.2)
    store.finish_run(run_id, status="complete")
    deadline = time.monotonic() + 30
    while any(t.name == "kbench-run-heartbeat" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the heartbeat thread outlived the last running run"
        time.sleep(0.2)


def test_results_show_and_the_dashboard_show_a_dead_owners_run_as_abandoned(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    url = f"sqlite:///{db}"
    store = Store.open(url)
    here, there = _begin(store), _begin(store)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    with store.engine.begin() as conn:  # a kbench of this host that has exited since
        conn.execute(update(schema.runs).where(schema.runs.c.id == here).values(owner_pid=int(gone.stdout)))
    _owned_by(store, there, host="elsewhere", beat_seconds_ago=RUN_LEASE_S * 3)
    store.engine.dispose()
    kbench = [str(Path(sys.executable).parent / "kbench"), "--db", url]
    listed = json.loads(subprocess.run([*kbench, "results", "--json"], capture_output=True, text=True,
                                       check=True).stdout)
    assert {r["id"]: r["status"] for r in listed} == {here: "abandoned", there: "abandoned"}
    shown = subprocess.run([*kbench, "show", str(there)], capture_output=True, text=True, check=True).stdout
    assert "abandoned" in shown
    # read-only: shown, not stored (`kbench serve` opens the store for writing: it stores it)
    assert [_stored_status(Store.open(url, read_only=True), r) for r in (here, there)] == ["running", "running"]
    port = free_port()
    server = subprocess.Popen([*kbench, "serve", "--host", LOOPBACK, "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for_port(port, timeout=60, process=server)
        for run_id in (here, there):
            with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/api/runs/{run_id}", timeout=30) as answer:
                assert json.load(answer)["status"] == "abandoned"
    finally:
        server.terminate()
        server.wait(timeout=30)


def _task(store: Store, task_id: str, *, lease_seconds_from_now: float, state: str = "running") -> None:
    now = _seconds_ago(store, 0)
    with store.engine.begin() as conn:
        if conn.execute(text("SELECT count(*) FROM fleet_jobs WHERE id = 'j1'")).scalar_one() == 0:
            conn.execute(insert(schema.fleet_jobs).values(id="j1", name="job.yaml", job_text="", queues=["q"],
                                                          repeat=1, submitted_at=now))
        conn.execute(insert(schema.fleet_tasks).values(
            id=task_id, job_id="j1", queue="q", kind="instance", instance_ids=[0], label="x", repeat_index=0,
            state=state, attempts=1, machine="worker-7", lease_owner="inc", cancel_requested=False, errors=[],
            run_ids=[], created_at=now, lease_expires=now + timedelta(seconds=lease_seconds_from_now)))


def _stored_status(store: Store, run_id: int) -> str:
    with store.engine.connect() as conn:
        return str(conn.execute(text("SELECT status FROM runs WHERE id = :id"), {"id": run_id}).scalar_one())


def _heartbeat_at(store: Store, run_id: int) -> datetime:
    with store.engine.connect() as conn:
        value = conn.execute(text("SELECT heartbeat_at FROM runs WHERE id = :id"), {"id": run_id}).scalar_one()
    value = datetime.fromisoformat(value) if isinstance(value, str) else value
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def test_an_owner_that_has_exited_but_is_not_reaped_yet_is_gone() -> None:
    """A kbench killed with -9 stays a zombie until its parent reaps it (pid 1 after its shell
    left: here that took over a second); its run must read ``abandoned`` at once all the same."""
    started = datetime.now(UTC)  # the run began; its owner is forked right after
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    host, boot = socket.gethostname(), boot_id()
    try:
        assert not owner_gone(child.pid, boot, host, started)  # alive: it owns the run
        assert child.stdin is not None
        child.stdin.close()  # it exits; nobody waits for it yet
        deadline = time.monotonic() + 60
        while is_living(child.pid):
            assert time.monotonic() < deadline, "the child did not exit within 60 s"
            time.sleep(0.01)
        assert owner_gone(child.pid, boot, host, started)
    finally:
        child.wait()
