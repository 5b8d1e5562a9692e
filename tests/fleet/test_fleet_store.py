"""The fleet's bookkeeping in PostgreSQL: claims, leases, lost attempts, trial keys, fencing."""

from __future__ import annotations

import uuid

import numpy as np
import pytest
from sqlalchemy import update

from kbench.fleet.database import open_fleet_store
from kbench.fleet.run_store import LOST_LEASE, DbRetry, FleetRunStore, TrialTaken
from kbench.store import schema
from kbench.store.db import Store
from kbench.store.fleet import FleetStore, MachineNameTaken, PlannedTask, job_state
from tests.unit.test_store import SYSINFO, TARGET, _summary


@pytest.fixture
def fleet(private_postgres_url: str) -> FleetStore:
    return FleetStore(open_fleet_store(private_postgres_url), lease_s=30, max_attempts=3)


def _job(fleet: FleetStore, n: int = 1, *, job_id: str | None = None) -> list[str]:
    tasks = [PlannedTask(id=uuid.uuid4().hex, queue="skl-sp", kind="instance", instance_ids=(f"{i:012x}",),
                         label=f"t{i}", repeat_index=0) for i in range(n)]
    fleet.create_job(job_id=job_id or uuid.uuid4().hex[:12], name="j.yaml", job_text="benchmark: syscall.getppid\n",
                     queues=["skl-sp"], repeat=1, compare=None, submitted_by="me@here", tasks=tasks)
    return [task.id for task in tasks]


def _expire(fleet: FleetStore, task_id: str) -> None:
    """The lease ran out: its owner stopped renewing it (the database's clock decides)."""
    with fleet.engine.begin() as conn:
        conn.execute(update(schema.fleet_tasks).where(schema.fleet_tasks.c.id == task_id)
                     .values(lease_expires=schema.fleet_tasks.c.lease_expires - fleet.lease * 2))


def _begin(store: Store) -> int:
    return store.begin_run(benchmark="syscall.getppid", metric="syscall.getppid.latency", unit="ns",
                           direction="lower", params={}, request={}, sysinfo=SYSINFO, target=TARGET)


def test_one_attempt_owns_a_task_and_duplicates_are_told_so(fleet: FleetStore) -> None:
    (task,) = _job(fleet)
    first = fleet.claim(task, machine="lkp-1", incarnation="A")
    assert first.outcome == "run" and first.task["attempts"] == 1
    assert fleet.claim(task, machine="lkp-2", incarnation="B").outcome == "held"
    assert fleet.renew_leases("A", [task]) == {task} and fleet.renew_leases("B", [task]) == set()
    assert fleet.finish_task(task, "B", state="done") is False  # not B's to finish
    assert fleet.finish_task(task, "A", state="done", run_ids=[7]) is True
    assert fleet.claim(task, machine="lkp-2", incarnation="B").outcome == "finished"
    assert fleet.claim(uuid.uuid4().hex, machine="lkp-2", incarnation="B").outcome == "unknown"


def test_a_lost_attempt_is_counted_and_the_third_loss_fails_the_task(fleet: FleetStore) -> None:
    (task,) = _job(fleet)
    for attempt, machine in enumerate(("lkp-1", "lkp-2", "lkp-3"), start=1):
        claim = fleet.claim(task, machine=machine, incarnation=machine)
        assert claim.outcome == "run" and claim.task["attempts"] == attempt
        _expire(fleet, task)
    # The reaper finds the third lease expired: no fourth attempt.
    assert fleet.requeue_lost() == []
    row = fleet.task(task)
    assert row is not None and row["state"] == "failed" and len(row["errors"]) == 3
    assert [e["machine"] for e in row["errors"]] == ["lkp-1", "lkp-2", "lkp-3"]
    assert "lkp-3" in row["error"] and "lease" in row["error"]


def test_an_expired_lease_is_queued_again_once(fleet: FleetStore) -> None:
    (task,) = _job(fleet)
    fleet.claim(task, machine="lkp-1", incarnation="A")
    assert fleet.requeue_lost() == []  # lease still valid
    _expire(fleet, task)
    assert fleet.requeue_lost() == [(task, "skl-sp")]
    assert fleet.requeue_lost() == []  # once
    row = fleet.task(task)
    assert row is not None and (row["state"], row["published_at"], row["lease_owner"]) == ("queued", None, None)
    assert fleet.finish_task(task, "A", state="done") is False  # the lost owner cannot finish it any more
    again = fleet.claim(task, machine="lkp-2", incarnation="B")
    assert again.outcome == "run" and again.task["attempts"] == 2


def test_the_same_worker_getting_its_task_back_has_lost_its_earlier_attempt(fleet: FleetStore) -> None:
    (task,) = _job(fleet)
    fleet.claim(task, machine="lkp-1", incarnation="A")
    again = fleet.claim(task, machine="lkp-1", incarnation="A")  # its pool process died; Celery redelivered
    assert again.outcome == "run" and again.task["attempts"] == 2 and len(again.task["errors"]) == 1


def test_failed_attempts_are_retried_then_failed_with_every_error(fleet: FleetStore) -> None:
    (task,) = _job(fleet)
    verdicts = []
    for attempt in range(3):
        fleet.claim(task, machine="lkp-1", incarnation=f"A{attempt}")
        verdicts.append(fleet.fail_attempt(task, f"A{attempt}", f"boom {attempt}"))
    assert verdicts == ["retry", "retry", "failed"]
    row = fleet.task(task)
    assert row is not None and row["state"] == "failed" and row["error"] == "boom 2"
    assert [e["error"] for e in row["errors"]] == ["boom 0", "boom 1", "boom 2"]
    assert fleet.fail_attempt(task, "A2", "late") is None


def test_cancel_drops_queued_tasks_and_flags_running_ones(fleet: FleetStore) -> None:
    job = "cafe00000001"
    running, queued = _job(fleet, 2, job_id=job)
    fleet.claim(running, machine="lkp-1", incarnation="A")
    assert fleet.cancel_job(job) == {"queued": 1, "running": 1}
    assert fleet.cancel_requested([running, queued]) == {running, queued}
    assert fleet.claim(queued, machine="lkp-2", incarnation="B").outcome == "finished"
    assert fleet.finish_task(running, "A", state="cancelled")
    assert fleet.jobs(job_id=job)[0]["state"] == "cancelled"
    with pytest.raises(KeyError):
        fleet.cancel_job("nosuchjob")


def test_job_state_from_task_counts() -> None:
    def counts(**given: int) -> dict[str, int]:
        return {"queued": 0, "running": 0, "done": 0, "failed": 0, "cancelled": 0, **given}

    assert job_state(counts(queued=3), cancelled=False) == "queued"
    assert job_state(counts(queued=1, done=2), cancelled=False) == "running"
    assert job_state(counts(done=2, failed=1), cancelled=False) == "failed"
    assert job_state(counts(done=2, cancelled=1), cancelled=True) == "cancelled"
    assert job_state(counts(done=3), cancelled=False) == "done"


def test_machine_names_are_unique_among_live_workers(fleet: FleetStore) -> None:
    common = dict(queue="skl-sp", sysinfo=SYSINFO, machine_id=None, allow_command=False, pid=1)
    fleet.register_machine(name="lkp-skl-2sp7", incarnation="A", **common)
    with pytest.raises(MachineNameTaken, match="give this one another --name"):
        fleet.register_machine(name="lkp-skl-2sp7", incarnation="B", **common)
    fleet.machine_stopped("lkp-skl-2sp7", "A")
    fleet.register_machine(name="lkp-skl-2sp7", incarnation="B", **common)  # stopped: free to take over
    assert fleet.heartbeat("lkp-skl-2sp7", "A", current_task=None) is False
    assert fleet.heartbeat("lkp-skl-2sp7", "B", current_task=None) is True
    (machine,) = fleet.machines()
    assert (machine["name"], machine["state"], machine["memory_bytes"]) == ("lkp-skl-2sp7", "idle", 1 << 30)


def _run_store(fleet: FleetStore, task: str, incarnation: str, trials: list[int]) -> FleetRunStore:
    return FleetRunStore(fleet.engine, fleet=fleet, task_id=task, incarnation=incarnation, trials=trials,
                         retry=DbRetry(5))


def test_trial_keys_store_each_trial_once_and_lost_runs_are_released(fleet: FleetStore) -> None:
    (task,) = _job(fleet)
    fleet.claim(task, machine="lkp-1", incarnation="A")
    first = _run_store(fleet, task, "A", [0, 1])
    done = _begin(first)
    first.finish_run(done, status="complete", columns={"ticks": np.arange(5, dtype=np.uint64)},
                     summaries=[_summary(1.0)])
    partial = _begin(first)  # trial 1 is being measured when worker A dies
    _expire(fleet, task)
    fleet.claim(task, machine="lkp-2", incarnation="B")
    assert fleet.stored_trials(task) == {0: done}
    # A second store for trial 1 cannot begin while the lost run holds the key ...
    with pytest.raises(TrialTaken):
        _begin(_run_store(fleet, task, "B", [1]))
    # ... until the new attempt releases it: the partial run is kept as interrupted.
    assert fleet.release_runs(task, keep_complete=True, reason="lost") == [partial]
    second = _run_store(fleet, task, "B", [1])
    rerun = _begin(second)
    second.finish_run(rerun, status="complete", summaries=[_summary(2.0)])
    assert fleet.stored_trials(task) == {0: done, 1: rerun}
    runs = {r["id"]: r for r in fleet.task_runs(task)}
    assert runs[partial]["status"] == "interrupted" and runs[partial]["task_key"] == f"{task}#1~{partial}"
    assert runs[partial]["error"] == "lost"


def test_a_run_finished_after_the_lease_was_lost_is_not_complete(fleet: FleetStore) -> None:
    (task,) = _job(fleet)
    fleet.claim(task, machine="lkp-1", incarnation="A")
    store = _run_store(fleet, task, "A", [0])
    run = _begin(store)
    _expire(fleet, task)
    fleet.claim(task, machine="lkp-2", incarnation="B")  # B took the task over; A still measures
    store.finish_run(run, status="complete", columns={"ticks": np.arange(3, dtype=np.uint64)},
                     summaries=[_summary(1.0)])
    record = Store(fleet.engine).get_run(run)
    assert record.status == "interrupted" and record.error == LOST_LEASE
    assert record.n_samples == 3  # its samples are kept
    assert fleet.stored_trials(task) == {}


def test_a_comparison_rerun_releases_every_run_of_the_lost_attempt(fleet: FleetStore) -> None:
    (task,) = _job(fleet)
    fleet.claim(task, machine="lkp-1", incarnation="A")
    store = _run_store(fleet, task, "A", [0, 1, 2])
    complete = _begin(store)
    store.finish_run(complete, status="complete", summaries=[_summary(1.0)])
    running = _begin(store)
    released = fleet.release_runs(task, keep_complete=False, reason="comparison rerun")
    assert sorted(released) == sorted([complete, running])
    assert {r["status"] for r in fleet.task_runs(task)} == {"interrupted"}
    assert fleet.stored_trials(task) == {}


def test_a_late_result_is_fenced_off_by_attempt_id_even_from_the_same_worker(fleet: FleetStore) -> None:
    """Attempt 1 of worker A was presumed lost (cut from the network) and A itself took the task
    again as attempt 2: the worker's incarnation alone cannot tell them apart, the attempt id can.
    Attempt 1's late run is stored interrupted, it may neither begin a run nor end the task."""
    (task,) = _job(fleet)
    assert fleet.claim(task, machine="lkp-1", incarnation="A").task["attempts"] == 1
    late = FleetRunStore(fleet.engine, fleet=fleet, task_id=task, incarnation="A", trials=[0, 1], retry=DbRetry(5),
                         attempt=1)
    run = _begin(late)
    _expire(fleet, task)
    assert fleet.requeue_lost() == [(task, "skl-sp")]
    assert fleet.claim(task, machine="lkp-1", incarnation="A").task["attempts"] == 2
    assert fleet.holds_lease(task, "A", 2) and not fleet.holds_lease(task, "A", 1)
    late.finish_run(run, status="complete", columns={"ticks": np.arange(3, dtype=np.uint64)},
                    summaries=[_summary(1.0)])
    record = Store(fleet.engine).get_run(run)
    assert record.status == "interrupted" and record.error == LOST_LEASE and record.n_samples == 3
    with pytest.raises(TrialTaken, match=r"attempt 1 .* no longer holds its lease"):
        _begin(late)
    assert fleet.finish_task(task, "A", state="done", run_ids=[run], attempt=1) is False
    assert fleet.fail_attempt(task, "A", "late", attempt=1) is None
    assert fleet.task(task)["state"] == "running"
    assert fleet.finish_task(task, "A", state="done", run_ids=[], attempt=2) is True
