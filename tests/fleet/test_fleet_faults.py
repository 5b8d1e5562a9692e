"""The fleet under faults: workers killed, the broker restarted, the database away, bad jobs.

Each test ends with the same checks: every task in a clear final state, every trial
stored once as ``complete`` (an interrupted attempt's run kept, marked ``interrupted``,
its key released), and nothing else stored.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbench.fleet.app import send_tasks
from kbench.fleet.settings import FleetSettings
from kbench.store.fleet import FleetStore, PlannedTask
from tests.fleet.conftest import TEST_TIMING, FleetHarness, alive, run_harness, wait_until, write_job
from tests.services import running_postgres

SLOW_COMMAND = """\
benchmark: command
params:
  cmd: "sleep 0.25"
samples: 16
warmup: 0
"""
"""About 4 s per run, nearly all of it asleep (gentle on a shared machine)."""


def _assert_each_trial_stored_once(fleet: FleetHarness, job_id: str) -> list[dict]:
    tasks = fleet.tasks(job_id)
    for task in tasks:
        runs = fleet.runs_of(task["id"])
        complete = [r for r in runs if r["status"] == "complete"]
        assert [r["task_key"] for r in complete] == [f"{task['id']}#0"], runs
        assert all("~" in r["task_key"] and r["status"] in ("interrupted", "failed") for r in runs
                   if r not in complete), runs
        assert task["run_ids"] == [complete[0]["id"]]
    return tasks


def _running_run(fleet: FleetHarness, task_id: str) -> dict | None:
    runs = [r for r in fleet.runs_of(task_id) if r["status"] == "running"]
    return runs[0] if runs else None


def _only_task(fleet: FleetHarness, job_id: str) -> dict:
    (task,) = fleet.tasks(job_id)
    return task


def test_kill_9_of_a_worker_mid_run_reruns_the_task_once_and_keeps_the_partial_run(
    fleet: FleetHarness, tmp_path: Path,
) -> None:
    job_file = write_job(tmp_path / "slow.yaml", SLOW_COMMAND)
    first = fleet.start_worker("k-1", "k", "--allow-command")
    second = fleet.start_worker("k-2", "k", "--allow-command")
    job = fleet.submit(job_file, "--queue", "k")
    task_id = _only_task(fleet, job)["id"]
    partial = wait_until(lambda: _running_run(fleet, task_id), what="the run to start")
    victim = first if _only_task(fleet, job)["machine"] == "k-1" else second
    survivor = second if victim is first else first
    pool = victim.pool_pids()
    assert pool, "the worker runs its task in a pool process"
    fleet.kill9(victim)
    # The pool process dies with its worker (parent-death signal), not later.
    wait_until(lambda: not any(alive(pid) for pid in pool), timeout=30, what="the pool process to die")

    assert fleet.wait_job(job) == "done"
    (task,) = _assert_each_trial_stored_once(fleet, job)
    assert task["machine"] == survivor.name and task["attempts"] == 2
    assert len(task["errors"]) == 1 and victim.name in task["errors"][0]["error"]
    runs = fleet.runs_of(task_id)
    lost = [r for r in runs if r["id"] == partial["id"]]
    assert lost and lost[0]["status"] == "interrupted" and "lost" in lost[0]["error"]
    assert len(runs) == 2 and len(fleet.runs()) == 2

    # The killed machine comes back under its name: it takes the name over and stores nothing again.
    back = fleet.start_worker(victim.name, "k", "--allow-command")
    seen = fleet.machine(back.name)["last_seen"]
    wait_until(lambda: fleet.machine(back.name)["last_seen"] > seen, what="a heartbeat of the restarted worker")
    assert len(fleet.runs()) == 2 and fleet.machine(back.name)["pid"] == back.process.pid


def test_kill_9_of_a_worker_leaves_nothing_in_its_temporary_directory(fleet: FleetHarness, tmp_path: Path) -> None:
    """The prefork pool's multiprocessing directory (``pymp-*``, its shared memory) lives in a
    scratch directory of kbench's, which the guardian removes when the worker is killed."""
    tmp = tmp_path / "worker-tmp"
    tmp.mkdir()
    worker = fleet.start_worker("tmp-1", "tmpdir", env={"TMPDIR": str(tmp)})
    wait_until(lambda: any(tmp.rglob("pymp-*")), timeout=90, what="the pool's multiprocessing directory")
    fleet.kill9(worker)
    wait_until(lambda: not any(tmp.iterdir()), timeout=60, what="the killed worker's temporary files to go")


def test_a_pool_process_killed_mid_run_is_delivered_again(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file = write_job(tmp_path / "slow.yaml", SLOW_COMMAND)
    worker = fleet.start_worker("p-1", "p", "--allow-command")
    job = fleet.submit(job_file, "--queue", "p")
    task_id = _only_task(fleet, job)["id"]
    wait_until(lambda: _running_run(fleet, task_id), what="the run to start")
    (pool,) = worker.pool_pids()
    worker.note_pids()
    os.kill(pool, signal.SIGKILL)  # Celery rejects the message back to the queue (worker lost)
    assert fleet.wait_job(job) == "done"
    (task,) = _assert_each_trial_stored_once(fleet, job)
    assert task["attempts"] == 2 and task["machine"] == "p-1"
    assert sorted(r["status"] for r in fleet.runs_of(task_id)) == ["complete", "interrupted"]
    assert worker.process.poll() is None  # the worker itself lives on


def test_broker_restart_mid_job_loses_nothing_and_stores_nothing_twice(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file = write_job(tmp_path / "six.yaml", """\
benchmark: command
params:
  cmd: ["sleep 0.05", "sleep 0.06", "sleep 0.07", "sleep 0.08", "sleep 0.09", "sleep 0.1"]
samples: 10
warmup: 0
""")
    fleet.start_worker("b-1", "b", "--allow-command")
    job = fleet.submit(job_file, "--queue", "b")
    wait_until(lambda: any(t["state"] == "done" for t in fleet.tasks(job)), what="a first task to finish")
    fleet.stop_broker()
    # While the broker is away a submission fails cleanly and stores nothing.
    refused = fleet.kbench("fleet", "submit", str(job_file), "--queue", "b", check=False)
    assert refused.returncode == 7 and "broker is unreachable" in refused.stderr
    assert "Traceback" not in refused.stderr
    time.sleep(3)
    fleet.start_broker()
    assert fleet.wait_job(job) == "done"
    tasks = _assert_each_trial_stored_once(fleet, job)
    assert len(tasks) == 6 and len(fleet.runs()) == 6
    assert len(fleet.kbench("fleet", "status", "--json").stdout) and len(
        json.loads(fleet.kbench("fleet", "status", "--json").stdout)["jobs"]) == 1


@pytest.fixture
def restartable_fleet(tmp_path: Path) -> Iterator[tuple[FleetHarness, object]]:
    """A fleet on a PostgreSQL server of its own, which the test stops and starts."""
    with running_postgres(tmp_path / "pg") as server:
        yield from ((harness, server) for harness in run_harness(tmp_path / "fleet", server.url))


def test_database_unreachable_for_10_s_mid_job(restartable_fleet: tuple[FleetHarness, object], tmp_path: Path) -> None:
    fleet, server = restartable_fleet
    job_file = write_job(tmp_path / "six.yaml", """\
benchmark: command
params:
  cmd: ["sleep 0.05", "sleep 0.06", "sleep 0.07", "sleep 0.08", "sleep 0.09", "sleep 0.1"]
samples: 10
warmup: 0
""")
    fleet.start_worker("d-1", "d", "--allow-command")
    fleet.start_worker("d-2", "d", "--allow-command")
    job = fleet.submit(job_file, "--queue", "d")
    wait_until(lambda: any(t["state"] == "done" for t in fleet.tasks(job)), what="a first task to finish")
    fleet.engine.dispose()
    server.stop()  # type: ignore[attr-defined]
    down = fleet.kbench("fleet", "status", check=False)
    assert down.returncode == 5 and down.stderr.count("\n") == 1 and "database" in down.stderr
    time.sleep(10)
    server.start()  # type: ignore[attr-defined]
    assert fleet.wait_job(job) == "done"
    tasks = _assert_each_trial_stored_once(fleet, job)
    assert len(tasks) == 6 and len(fleet.runs()) == 6 and {t["state"] for t in tasks} == {"done"}
    assert all(w.process.poll() is None for w in fleet.workers.values())  # the workers rode it out


def test_a_malformed_job_is_refused_whole_and_nothing_is_queued(fleet: FleetHarness, tmp_path: Path) -> None:
    bad = write_job(tmp_path / "bad.yaml", "benchmark: syscall.getppid\nsamples: many\nwarmup: 0.5\n")
    out = fleet.kbench("fleet", "submit", str(bad), "--queue", "m", check=False)
    assert out.returncode == 2
    assert "bad.yaml:2: samples:" in out.stderr and "bad.yaml:3: warmup:" in out.stderr
    assert "nothing was run" in out.stderr
    path_target = write_job(tmp_path / "path.yaml", "benchmark: syscall.getppid\ntarget: ./bzImage\n")
    out = fleet.kbench("fleet", "submit", str(path_target), "--queue", "m", check=False)
    assert out.returncode == 2 and f"target './bzImage': no such file {tmp_path}/bzImage" in out.stderr
    out = fleet.kbench("fleet", "submit", str(path_target), "--queue", "no such class", check=False)
    assert out.returncode == 2 and "is not a machine class name" in out.stderr
    assert fleet.queue_length("m") == 0
    assert json.loads(fleet.kbench("fleet", "status", "--json").stdout)["jobs"] == []


def test_a_worker_runs_only_valid_kbench_jobs_it_allows(fleet: FleetHarness, tmp_path: Path) -> None:
    fleet.start_worker("s-1", "s")  # without --allow-command
    store = FleetStore(fleet.engine, lease_s=TEST_TIMING.lease_s)
    settings = FleetSettings(broker_url=fleet.broker_url, db_url=fleet.db_url, timing=TEST_TIMING)
    from kbench.fleet.app import make_app

    app = make_app(settings)
    # 1. A command job: refused by this worker, once, with the reason.
    command = write_job(tmp_path / "cmd.yaml", "benchmark: command\nparams:\n  cmd: touch /tmp/pwned\nsamples: 3\n")
    submitted = fleet.kbench("fleet", "submit", str(command), "--queue", "s", "--json")
    assert "no running machine of class s allows it" in submitted.stderr
    job = json.loads(submitted.stdout)["job"]
    assert fleet.wait_job(job) == "failed"
    (task,) = fleet.tasks(job)
    assert task["attempts"] == 1 and "--allow-command" in task["error"]
    # 2. A tampered job text in the store: validated again on the worker and refused.
    forged = PlannedTask(id=uuid.uuid4().hex, queue="s", kind="instance", instance_ids=("0123456789ab",),
                         label="forged", repeat_index=0)
    store.create_job(job_id="forgedjob001", name="forged.yaml", job_text="benchmark: [syscall.getppid\n",
                     queues=["s"], repeat=1, compare=None, submitted_by="attacker", tasks=[forged])
    send_tasks(app, [(forged.id, "s")])
    # 3. A message naming no stored task: dropped.
    send_tasks(app, [(uuid.uuid4().hex, "s")])
    assert fleet.wait_job("forgedjob001") == "failed"
    (task,) = fleet.tasks("forgedjob001")
    assert task["error"].startswith("invalid job: forged.yaml:") and task["attempts"] == 1
    wait_until(lambda: fleet.queue_length("s") == 0, what="the queue to drain")
    wait_until(lambda: "no task" in fleet.log_tail(fleet.workers["s-1"], 20_000), what="the unknown task's log line")
    assert fleet.runs() == [] and not Path("/tmp/pwned").exists()


def test_a_task_failing_three_times_is_failed_with_every_error_kept(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file = write_job(tmp_path / "fails.yaml", "benchmark: syscall.pread\nparams:\n  dir: /nonexistent/kbench\n"
                                                  "samples: 5\n")
    fleet.start_worker("f-1", "f")
    job = fleet.submit(job_file, "--queue", "f")
    assert fleet.wait_job(job) == "failed"
    (task,) = fleet.tasks(job)
    assert task["attempts"] == 3 and len(task["errors"]) == 3
    assert all("/nonexistent/kbench" in e["error"] for e in task["errors"]) and "/nonexistent/kbench" in task["error"]
    runs = fleet.runs_of(task["id"])
    assert [r["status"] for r in runs] == ["failed"] * 3 and all("~" in r["task_key"] for r in runs[:2])
    status = fleet.kbench("fleet", "status", job).stdout
    assert "failed" in status and "/nonexistent/kbench" in status


def test_cancel_stops_the_running_task_and_drops_the_queued_ones(fleet: FleetHarness, tmp_path: Path) -> None:
    job_file = write_job(tmp_path / "long.yaml", """\
benchmark: syscall.getppid
runtime: [60s, 61s, 62s]
warmup: 0
""")
    fleet.start_worker("c-1", "c")
    job = fleet.submit(job_file, "--queue", "c")
    running = wait_until(lambda: next((t for t in fleet.tasks(job) if t["state"] == "running"), None),
                         what="a task to start")
    wait_until(lambda: _running_run(fleet, running["id"]), what="its run to start")
    out = fleet.kbench("fleet", "cancel", job)
    assert "2 queued task(s) cancelled, 1 running task(s) told to stop" in out.stdout
    assert fleet.wait_job(job) == "cancelled"
    states = sorted(t["state"] for t in fleet.tasks(job))
    assert states == ["cancelled"] * 3
    (run,) = fleet.runs()
    assert run["status"] == "interrupted" and run["n_samples"] > 0  # the samples taken were kept
    missing = fleet.kbench("fleet", "cancel", "nosuchjob", check=False)
    assert missing.returncode == 4 and "no fleet job nosuchjob" in missing.stderr


def test_a_broker_that_lost_its_data_gets_the_queued_tasks_again_with_resend(
    fleet: FleetHarness, tmp_path: Path,
) -> None:
    import shutil

    job_file = write_job(tmp_path / "two.yaml", "benchmark: [syscall.getppid, syscall.noop]\nsamples: 50\n")
    job = fleet.submit(job_file, "--queue", "r")  # no machine of class r yet: the messages wait in Redis
    assert fleet.queue_length("r") == 2
    fleet.stop_broker()
    for path in fleet.redis_dir.iterdir():  # the broker loses everything it had
        if path.name != "redis.log":
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    fleet.start_broker()
    assert fleet.queue_length("r") == 0
    fleet.start_worker("r-1", "r")
    assert {t["state"] for t in fleet.tasks(job)} == {"queued"}  # still known to the store
    out = fleet.kbench("fleet", "resend", job)
    assert "2 queued task(s) sent again" in out.stdout
    assert fleet.wait_job(job) == "done"
    _assert_each_trial_stored_once(fleet, job)
    assert len(fleet.runs()) == 2
