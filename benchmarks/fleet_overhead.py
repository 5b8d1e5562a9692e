"""Fleet overhead per task with 4 workers (goal: median <= 0.5 s), and 1,000 tiny tasks drained without loss.

Usage: .venv/bin/python benchmarks/fleet_overhead.py [--workers 4] [--batches 25] [--drain 1000]

Starts Redis and PostgreSQL in a temp dir (127.0.0.1, free ports) and ``--workers``
``kbench worker`` processes on one class, then:

1. latency: ``--batches`` submissions of one task per worker, each waited for, so a task
   meets an idle worker. Per task, from the times the fleet records:
   enqueue → start (message sent → the worker's claim), end → stored (the measurement's
   end → its run and the task's state committed), and the measurement itself in between;
2. drain: one submission of ``--drain`` tiny tasks (``syscall.getppid``, 10 samples);
   waits until none is queued or running, then checks that each task is ``done`` with
   exactly one complete run and that nothing else was stored.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import text

from kbench.fleet.database import fleet_engine
from kbench.fleet.demo import LocalFleet
from kbench.fleet.settings import FleetSettings, FleetTiming
from kbench.fleet.submit import submit_job
from kbench.store.fleet import FleetStore

TIMING = FleetTiming(heartbeat_s=1.0, lease_s=30.0, visibility_timeout_s=3600.0, db_retry_s=120.0)
TINY = "benchmark: syscall.getppid\nsamples: 10\nwarmup: 0\n"


def _wait_done(fleet: FleetStore, job_id: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = fleet.jobs(job_id=job_id)[0]
        if not job["counts"]["queued"] and not job["counts"]["running"]:
            return job
        time.sleep(0.1)
    raise TimeoutError(f"job {job_id} not finished after {timeout:.0f} s")


def _quantiles(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"median {statistics.median(ordered):.3f} s  p90 {p90:.3f} s  max {ordered[-1]:.3f} s"


def _local_runs(tmp: Path, job_file: Path, count: int) -> list[float]:
    """Wall time of run_job on the same instance here (SQLite store, warm process): the work a
    task does besides the fleet's own steps."""
    from kbench.engine.job_runner import run_job
    from kbench.jobs import expand_job
    from kbench.store.db import Store
    from kbench.targets.factory import make_target

    store = Store.open(f"sqlite:///{tmp / 'local.db'}")
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run_job(store, expand_job(job_file.read_text(), cpu_count=2, name=job_file.name), make_target)
        times.append(time.perf_counter() - start)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--batches", type=int, default=25)
    parser.add_argument("--drain", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kbench-fleet-bench-") as tmp, \
            LocalFleet(Path(tmp), classes=["bench"] * args.workers, timing=TIMING) as local:
        settings = FleetSettings(broker_url=local.broker_url, db_url=local.db_url, timing=TIMING)
        job_file = Path(tmp) / "tiny.yaml"
        job_file.write_text(TINY)
        engine = fleet_engine(local.db_url)
        fleet = FleetStore(engine, lease_s=TIMING.lease_s)
        print(f"{args.workers} workers on one class, Redis + PostgreSQL on 127.0.0.1")

        latency_jobs = []
        for _ in range(args.batches):
            submission = submit_job(settings, job_file, queues=["bench"], repeat=args.workers, compare=None,
                                    cpu_count=2)
            _wait_done(fleet, submission.job_id, 120)
            latency_jobs.append(submission.job_id)
        with engine.connect() as conn:
            rows = conn.execute(text(
                "select extract(epoch from started_at - published_at), extract(epoch from measured_at - started_at),"
                " extract(epoch from finished_at - measured_at) from fleet_tasks"
                " where job_id = any(:jobs) and state = 'done'"), {"jobs": latency_jobs}).all()
        waits, work, stores = ([float(row[i]) for row in rows] for i in range(3))
        print(f"\nlatency: {len(rows)} tasks in {args.batches} batches of {args.workers} (idle workers)")
        print(f"  enqueue -> start   {_quantiles(waits)}")
        print(f"  start -> measured  {_quantiles(work)}   (claim, job validation, probe run)")
        print(f"  end -> stored      {_quantiles(stores)}")
        print(f"  overhead (enqueue->start + end->stored) median "
              f"{statistics.median(w + s for w, s in zip(waits, stores, strict=True)):.3f} s  (goal <= 0.5 s)")
        local = _local_runs(Path(tmp), job_file, args.batches)
        print(f"  beside it, the same instance run as `kbench run` does, in one process on SQLite: "
              f"{_quantiles(local)}")

        start = time.monotonic()
        drain = submit_job(settings, job_file, queues=["bench"], repeat=args.drain, compare=None, cpu_count=2)
        submitted = time.monotonic() - start
        job = _wait_done(fleet, drain.job_id, 3600)
        elapsed = time.monotonic() - start
        with engine.connect() as conn:
            tasks_done = conn.execute(text(
                "select count(*) from fleet_tasks where job_id = :j and state = 'done'"), {"j": drain.job_id}).scalar()
            per_task = conn.execute(text(
                "select count(r.id) filter (where r.status = 'complete'), count(r.id) from fleet_tasks t"
                " left join runs r on r.task_key like t.id || '#%' where t.job_id = :j group by t.id"),
                {"j": drain.job_id}).all()
            total_runs = conn.execute(text("select count(*) from runs")).scalar()
        once = sum(1 for complete, every in per_task if complete == 1 and every == 1)
        print(f"\ndrain: {args.drain} tiny tasks submitted in {submitted:.1f} s, all finished after {elapsed:.1f} s "
              f"({args.drain / elapsed:.1f} tasks/s)")
        print(f"  tasks done {tasks_done}/{args.drain}; with exactly one complete run and nothing else {once}; "
              f"runs in the store {total_runs} (= {len(rows)} + {args.drain} expected); state {job['state']}")
        engine.dispose()
        lost = tasks_done != args.drain or once != args.drain or total_runs != len(rows) + args.drain
        print("\nno loss, nothing twice" if not lost else "\nLOSS OR DUPLICATES")
        return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
