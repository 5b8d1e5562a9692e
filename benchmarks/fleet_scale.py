"""The fleet at scale: 10,000 small tasks drained by 20 workers, and `fleet status` / the dashboard then.

Usage: nice -n 10 .venv/bin/python benchmarks/fleet_scale.py [--tasks 10000] [--workers 20] [--classes 5]

Starts Redis (append-only file, ``appendfsync always``) and PostgreSQL in a temp dir on
127.0.0.1 and ``--workers`` ``kbench worker`` processes spread over ``--classes`` machine
classes (20 = 5 classes x 4 workers), all on this host. Then:

1. drain: one submission of ``--tasks`` small tasks (``syscall.getppid``, 10 samples, no
   warm-up; ``--repeat`` over every class), waited for. Reported: tasks per second (from the
   submission to the last task's end), the p50/p99 from enqueue to start (message sent →
   claim: with a backlog this is mostly the wait in the queue) and the gap a worker leaves
   between two tasks (its previous task stored → its next one claimed: the broker's delivery
   and the claim), the time per task early and late in the drain, the CPU time that Redis,
   PostgreSQL and the workers used, and the store's size;
2. checks: every task ``done`` after one attempt with exactly one run, ``complete``, holding
   its key ``TASK#0``, and no other run: 0 lost, 0 duplicated;
3. reads with all those tasks and runs in the store: ``kbench fleet status``, ``fleet status
   JOB`` (text and ``--json``), ``fleet machines`` (wall time of each command, as typed, best
   and median of 5), and the dashboard (``kbench serve`` on the fleet's database: ``/``,
   ``/api/series``, the series page and ``/regressions``, after one warm-up request).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from sqlalchemy import text

from kbench.fleet.database import fleet_engine
from kbench.fleet.demo import LocalFleet
from kbench.fleet.services import free_port, wait_for_port
from kbench.fleet.settings import FleetSettings, FleetTiming
from kbench.fleet.submit import submit_job
from kbench.store.fleet import FleetStore

TIMING = FleetTiming(heartbeat_s=2.0, lease_s=30.0, visibility_timeout_s=3600.0, db_retry_s=120.0)
SMALL = "benchmark: syscall.getppid\nsamples: 10\nwarmup: 0\n"
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU of ``pids`` and of the children they waited for."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(fields[i]) for i in (11, 12, 13, 14))
    return total / TICK


def _pids_whose_cmdline_has(*needles: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if all(needle in cmdline for needle in needles):
                found.append(int(entry.name))
    return found


def _with_children(pids: list[int]) -> list[int]:
    """``pids`` and their live children (a worker's pool process, PostgreSQL's backends)."""
    found = list(pids)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if parent in pids:
                found.append(int(entry.name))
    return found


def _busy_cpu_seconds() -> float:
    """CPU time this machine spent not idle (every process, the other users' too)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICK


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _timed(command: list[str], env: dict[str, str], runs: int = 5) -> tuple[float, float, int]:
    """Best and median wall time of ``command`` (seconds) and its output's size."""
    times, size = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        out = subprocess.run(command, capture_output=True, env=env, check=True)
        times.append(time.perf_counter() - start)
        size = len(out.stdout)
    return min(times), statistics.median(times), size


def _get(url: str) -> tuple[float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as response:
        body = response.read()
    return time.perf_counter() - start, len(body)


def _dashboard(db_url: str, env: dict[str, str]) -> list[tuple[str, float, float, int]]:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "kbench.cli", "--db", db_url, "serve", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        wait_for_port(port, 120, server)
        base = f"http://127.0.0.1:{port}"
        series = json.loads(urllib.request.urlopen(f"{base}/api/series", timeout=120).read())
        items = series["series"] if isinstance(series, dict) else series
        sid = items[0]["id"] if items else None
        pages = ["/", "/api/series", *([f"/series/{sid}", f"/api/series/{sid}"] if sid else []), "/regressions"]
        found = []
        for page in pages:
            first, size = _get(base + page)
            again = [_get(base + page)[0] for _ in range(3)]
            found.append((page, first, statistics.median(again), size))
        return found
    finally:
        server.terminate()
        server.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=20)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--max-wait", type=float, default=3600.0,
                        help="Stop draining after this many seconds; the workers finish their task in hand, the "
                        "checks cover what was done and the reads run with every task in the store.")
    parser.add_argument("--fsync-always", action="store_true",
                        help="Keep the test broker's appendfsync always (default: everysec, as docs/fleet.md "
                        "configures Redis).")
    args = parser.parse_args()
    classes = [f"scale-{i + 1}" for i in range(args.classes)]
    repeat = args.tasks // len(classes)
    tasks_total = repeat * len(classes)
    with tempfile.TemporaryDirectory(prefix="kbench-fleet-scale-") as tmp, \
            LocalFleet(Path(tmp), classes=[classes[i % len(classes)] for i in range(args.workers)],
                       timing=TIMING) as local:
        settings = FleetSettings(broker_url=local.broker_url, db_url=local.db_url, timing=TIMING)
        job_file = Path(tmp) / "small.yaml"
        job_file.write_text(SMALL)
        engine = fleet_engine(local.db_url)
        fleet = FleetStore(engine, lease_s=TIMING.lease_s)
        redis = _pids_whose_cmdline_has("redis-server", local.broker_url.rsplit(":", 1)[1].split("/")[0])
        postmaster = _pids_whose_cmdline_has("postgres", f"-p {local.db_url.rsplit(':', 1)[1].split('/')[0]} ")
        workers = [w.process.pid for w in local.workers]
        if not args.fsync_always:
            import redis as redis_client

            client = redis_client.Redis.from_url(local.broker_url)
            client.config_set("appendfsync", "everysec")
            client.close()
        print(f"{args.workers} workers on {len(classes)} classes ({args.workers // len(classes)} per class), "
              f"Redis + PostgreSQL on 127.0.0.1, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")

        cpu = (lambda: (_cpu_seconds(redis), _cpu_seconds(_with_children(postmaster)),  # noqa: E731
                        _cpu_seconds(_with_children(workers)), _busy_cpu_seconds()))
        before = cpu()
        start = time.monotonic()
        drain = submit_job(settings, job_file, queues=classes, repeat=repeat, compare=None, cpu_count=2)
        submitted = time.monotonic() - start
        print(f"  {tasks_total} tasks stored and sent in {submitted:.1f} s", flush=True)
        backlog = []
        said = time.monotonic()
        while True:
            job = fleet.jobs(job_id=drain.job_id)[0]
            counts = job["counts"]
            backlog.append(counts["queued"])
            if not counts["queued"] and not counts["running"]:
                break
            if time.monotonic() - start > args.max_wait:
                print(f"  stopped after {args.max_wait:.0f} s: {counts['done']} done, {counts['queued']} queued; "
                      "the workers finish their task in hand", flush=True)
                for worker in local.workers:
                    worker.process.terminate()
                for worker in local.workers:
                    worker.process.wait(120)
                job = fleet.jobs(job_id=drain.job_id)[0]
                break
            if time.monotonic() - said > 60:
                said = time.monotonic()
                print(f"  after {said - start:.0f} s: {counts['done']} done, {counts['queued']} queued, "
                      f"{counts['running']} running; {counts['done'] / (said - start):.2f} tasks/s, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
            time.sleep(2)
        elapsed = time.monotonic() - start
        drained = job["counts"]["done"]
        redis_cpu, pg_cpu, workers_cpu, busy_cpu = (after - was for after, was in zip(cpu(), before, strict=True))

        with engine.connect() as conn:
            rows = conn.execute(text(
                "select machine, extract(epoch from started_at - published_at), started_at, finished_at,"
                " extract(epoch from finished_at - started_at) from fleet_tasks where job_id = :j"
                " and state = 'done' order by started_at"), {"j": drain.job_id}).all()
            checks = conn.execute(text(
                "select count(*) filter (where t.state = 'done'),"
                " count(*) filter (where t.state = 'done' and t.attempts = 1),"
                " count(*) filter (where r.n = 1 and r.complete = 1 and r.keyed = 1"
                "   and t.run_ids::jsonb = jsonb_build_array(r.first_id))"
                " from fleet_tasks t left join ("
                "   select split_part(task_key, '#', 1) as task, count(*) as n,"
                "   count(*) filter (where status = 'complete') as complete,"
                "   count(*) filter (where task_key = split_part(task_key, '#', 1) || '#0') as keyed,"
                "   min(id) as first_id from runs group by 1) r on r.task = t.id"
                " where t.job_id = :j"), {"j": drain.job_id}).one()
            all_runs = conn.execute(text("select count(*) from runs")).scalar()
            sizes = conn.execute(text(
                "select pg_database_size(current_database()), pg_total_relation_size('runs'),"
                " pg_total_relation_size('samples'), pg_total_relation_size('fleet_tasks'),"
                " (select count(*) from samples)")).one()
        waits = [float(row[1]) for row in rows]
        durations = [float(row[4]) for row in rows]
        gaps = []
        by_machine: dict[str, list[tuple]] = {}
        for row in rows:
            by_machine.setdefault(row[0], []).append(row)
        for runs in by_machine.values():
            gaps += [(b[2] - a[3]).total_seconds() for a, b in itertools.pairwise(runs)]
        tenth = max(1, len(durations) // 10)

        print(f"\ndrain: {tasks_total} small tasks ({SMALL.strip().replace(chr(10), ', ')}) on {len(classes)} "
              f"classes; sent in {submitted:.1f} s; {drained} done after {elapsed:.1f} s: "
              f"{drained / elapsed:.2f} tasks/s")
        print(f"  enqueue -> start: p50 {_quantile(waits, 0.5):.1f} s, p99 {_quantile(waits, 0.99):.1f} s "
              f"(the wait in the queue behind the backlog)")
        print(f"  a worker's gap between two tasks (stored -> next claimed): p50 {_quantile(gaps, 0.5):.3f} s, "
              f"p99 {_quantile(gaps, 0.99):.3f} s")
        print(f"  start -> stored per task: first tenth median {statistics.median(durations[:tenth]):.3f} s, "
              f"last tenth median {statistics.median(durations[-tenth:]):.3f} s")
        print(f"  queued tasks while draining (every 2 s): max {max(backlog)}, "
              f"never 0 before the end: {all(b > 0 for b in backlog[:-1]) if len(backlog) > 1 else True}")
        print(f"  CPU used during the drain: Redis {redis_cpu:.1f} s, PostgreSQL {pg_cpu:.1f} s, "
              f"workers (with their pool processes and probes) {workers_cpu:.1f} s; the machine was busy "
              f"{busy_cpu:.0f} of {elapsed * (os.cpu_count() or 1):.0f} CPU-s (other users included)")
        print(f"  store: database {sizes[0] / 2**20:.1f} MiB (runs {sizes[1] / 2**20:.1f} MiB, samples "
              f"{sizes[2] / 2**20:.1f} MiB, {sizes[4]} sample rows, fleet_tasks {sizes[3] / 2**20:.1f} MiB), "
              f"{all_runs} runs")
        done, first_attempt, once = checks
        queued_now = job["counts"]["queued"]
        lost = tasks_total - done - queued_now
        print(f"\nchecks: {done}/{tasks_total} done ({queued_now} still queued, never started), {first_attempt} "
              f"run once (attempts = 1), {once} with exactly one complete run holding its key; runs in the store "
              f"{all_runs}: {lost} lost, {all_runs - once} duplicated or extra")

        env = {**os.environ, "KBENCH_FLEET_CONFIG": str(local.config), "COLUMNS": "160"}
        env.pop("KBENCH_DB", None)
        cli = [sys.executable, "-m", "kbench.cli"]
        print(f"\nreads with {tasks_total} tasks and {all_runs} runs in the store (wall, best / median of 5):")
        for what in (["fleet", "status"], ["fleet", "status", drain.job_id], ["fleet", "status", drain.job_id,
                                                                              "--json"], ["fleet", "machines"]):
            best, median, size = _timed([*cli, *what], env)
            print(f"  kbench {' '.join(what):<40} {best:.3f} s / {median:.3f} s  ({size} bytes out)")
        best, median, _ = _timed([sys.executable, "-c", "pass"], env)
        print(f"  {'(python -c pass, for scale)':<47} {best:.3f} s / {median:.3f} s")
        for page, first, again, size in _dashboard(local.db_url, env):
            print(f"  dashboard GET {page:<34} first {first:.3f} s, then median {again:.3f} s  ({size} bytes)")
        engine.dispose()
        # a second attempt (a lease that lapsed under load before its run began) is neither a loss nor a duplicate
        bad = lost or once != done or all_runs != done
        retried = done - first_attempt
        print(("\n0 lost, 0 duplicated" if not bad else "\nLOSS OR DUPLICATES")
              + (f"; {retried} tasks needed a second attempt" if retried else ""))
        return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
