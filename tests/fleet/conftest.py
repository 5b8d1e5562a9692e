"""A real fleet for tests: Redis and PostgreSQL started here, ``kbench worker`` processes.

On one host, two workers are two *machines* of the fleet by their name (``--name``) and
class (``--queue``): each task records the machine that ran it, and each run is tagged
``worker:<name>`` and ``queue:<class>``; both workers share one ``machines`` row (same
inventory), which every run references through ``machine_id``.

Every worker runs in a session of its own; at teardown the harness stops it, then checks
by pid that neither it nor anything it started (pool process, probe) is left.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, select, text

from kbench.fleet.demo import start_worker, write_config
from kbench.fleet.settings import FleetTiming
from kbench.procfs import is_living, process_stat
from kbench.store import schema
from kbench.store.fleet import FleetStore
from tests.services import redis_server

TEST_TIMING = FleetTiming(heartbeat_s=0.5, lease_s=3.0, visibility_timeout_s=600.0, db_retry_s=90.0, max_attempts=3)
"""Fast heartbeats and short leases so that a lost worker is noticed in seconds; Redis's own
redelivery (visibility timeout) stays out of the way, so the leases are what is tested."""


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A private $TMPDIR for a ``kbench fleet demo`` that the postgres account can reach (pytest's
    tmp_path is under a 0700 directory of root's), removed at the end."""
    path = Path(tempfile.mkdtemp(prefix="kbench-demo-test-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def wait_until(condition: Callable[[], Any], *, timeout: float = 120, what: str, poll: float = 0.2) -> Any:
    """Poll ``condition`` until it returns something true; fail naming ``what`` after ``timeout``
    (a bound against hanging, not a speed claim)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(poll)


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc), grandchildren included."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = process_stat(entry.name)
        if fields is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid: int) -> bool:
    return is_living(pid)


@dataclass
class Worker:
    name: str
    machine_class: str
    process: subprocess.Popen[bytes]
    log: Path
    seen_pids: set[int] = field(default_factory=set)

    def note_pids(self) -> None:
        if self.process.poll() is None:
            self.seen_pids |= {self.process.pid, *descendants(self.process.pid)}

    def pool_pids(self) -> set[int]:
        """The worker's pool process(es): its direct children."""
        return {pid for pid in descendants(self.process.pid)
                if _parent(pid) == self.process.pid
                and not _is_guardian(pid)}


def _is_guardian(pid: int) -> bool:
    """kbench's guardian (kbench/_guardian.py), a child of every process that starts children."""
    try:
        return b"_guardian.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _parent(pid: int) -> int:
    fields = process_stat(pid)
    return int(fields[1]) if fields is not None else -1


class FleetHarness:
    """A Redis of its own (append-only file), the database URL, a 0600 fleet config, and the
    workers started for one test."""

    def __init__(self, workdir: Path, db_url: str, timing: FleetTiming = TEST_TIMING):
        self.workdir = workdir
        self.timing = timing
        self.db_url = db_url
        self.redis_dir = workdir / "redis"
        self._redis = ExitStack()
        self.broker_url = self._redis.enter_context(redis_server(self.redis_dir, persistent=True))
        self.broker_port = int(self.broker_url.rsplit(":", 1)[1].split("/")[0])
        self.config = workdir / "fleet.toml"
        write_config(self.config, db=db_url, broker=self.broker_url, timing=timing)
        self.workers: dict[str, Worker] = {}
        self.engine: Engine = create_engine(db_url, pool_pre_ping=True)

    # -- workers -----------------------------------------------------------------

    def start_worker(self, name: str, machine_class: str, *extra: str, wait: bool = True,
                     env: dict[str, str] | None = None, cwd: Path | None = None) -> Worker:
        log = self.workdir / f"{name}.log"
        process = start_worker(self.config, name=name, machine_class=machine_class, log=log, extra=extra, env=env,
                               cwd=cwd)
        worker = Worker(name, machine_class, process, log)
        self.workers[name] = worker
        if wait:
            self.wait_registered(worker)
        return worker

    def wait_registered(self, worker: Worker) -> None:
        wait_until(lambda: self._registered(worker), timeout=90, what=f"worker {worker.name} to register")
        worker.note_pids()

    def _registered(self, worker: Worker) -> bool:
        if worker.process.poll() is not None:
            raise AssertionError(f"worker {worker.name} exited {worker.process.returncode}:\n{self.log_tail(worker)}")
        with self.engine.connect() as conn:
            row = conn.execute(
                text("select pid, state from fleet_machines where name = :n"), {"n": worker.name}
            ).first() if self._has_fleet_tables(conn) else None
        return bool(row and row[0] == worker.process.pid and row[1] in ("idle", "busy"))

    @staticmethod
    def _has_fleet_tables(conn: Any) -> bool:
        return bool(conn.execute(text("select to_regclass('fleet_machines')")).scalar())

    def log_tail(self, worker: Worker, size: int = 3000) -> str:
        return worker.log.read_text(errors="replace")[-size:] if worker.log.exists() else ""

    def kill9(self, worker: Worker) -> set[int]:
        """SIGKILL the worker's main process, as a machine that dies; the pids it had."""
        worker.note_pids()
        os.kill(worker.process.pid, signal.SIGKILL)
        worker.process.wait()
        return set(worker.seen_pids)

    def stop_all(self) -> None:
        for worker in self.workers.values():
            worker.note_pids()
            if worker.process.poll() is None:
                worker.process.send_signal(signal.SIGTERM)
        for worker in self.workers.values():
            try:
                worker.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()

    def leftover_pids(self) -> set[int]:
        """Processes a worker started that are still alive (a probe may need a moment to
        finish the samples it was asked for; it is killed and reported after 30 s)."""
        pids = set().union(*(w.seen_pids for w in self.workers.values())) if self.workers else set()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(alive(pid) for pid in pids):
            time.sleep(0.2)
        left = {pid for pid in pids if alive(pid)}
        for pid in left:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return left

    # -- the CLI -----------------------------------------------------------------

    def kbench(self, *args: str, check: bool = True, env: dict[str, str] | None = None,
               timeout: float = 120) -> subprocess.CompletedProcess[str]:
        environment = {**os.environ, "KBENCH_FLEET_CONFIG": str(self.config), "COLUMNS": "200", **(env or {})}
        for variable in ("KBENCH_DB", "KBENCH_BROKER"):
            if variable not in (env or {}):
                environment.pop(variable, None)
        proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True,
                              env=environment, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kbench {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}")
        return proc

    def submit(self, job: Path, *args: str) -> str:
        out = self.kbench("fleet", "submit", str(job), *args, "--json")
        return str(json.loads(out.stdout)["job"])

    # -- the store ---------------------------------------------------------------

    def tasks(self, job_id: str) -> list[dict[str, Any]]:
        t = schema.fleet_tasks
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(select(t).where(t.c.job_id == job_id)).mappings()]

    def job_state(self, job_id: str) -> str:
        """The job's state as ``kbench fleet status`` computes it (read here, in-process)."""
        return str(FleetStore(self.engine, lease_s=self.timing.lease_s).jobs(job_id=job_id)[0]["state"])

    def wait_job(self, job_id: str, states: tuple[str, ...] = ("done", "failed", "cancelled"),
                 timeout: float = 240) -> str:
        return str(wait_until(lambda: (s := self.job_state(job_id)) in states and s, timeout=timeout,
                              what=f"job {job_id} to end", poll=0.5))

    def runs(self, where: str = "true", **params: Any) -> list[dict[str, Any]]:
        with self.engine.connect() as conn:
            rows = conn.execute(text(
                "select id, status, task_key, error, tags, machine_id, benchmark, params, request, n_samples from runs "
                f"where {where} order by id"), params).mappings()
            return [dict(r) for r in rows]

    def runs_of(self, task_id: str) -> list[dict[str, Any]]:
        return self.runs("task_key like :k", k=f"{task_id}#%")

    def machine(self, name: str) -> dict[str, Any]:
        with self.engine.connect() as conn:
            return dict(conn.execute(select(schema.fleet_machines).where(schema.fleet_machines.c.name == name))
                        .mappings().one())

    def stop_broker(self) -> None:
        self._redis.close()

    def start_broker(self) -> None:
        """Redis again on its port, with the queues it had (append-only file)."""
        self._redis = ExitStack()
        self._redis.enter_context(redis_server(self.redis_dir, port=self.broker_port, persistent=True))

    def queue_length(self, machine_class: str) -> int:
        import redis

        client = redis.Redis.from_url(self.broker_url)
        try:
            return int(client.llen(f"kbench.{machine_class}"))
        finally:
            client.close()

    def close(self) -> None:
        self.engine.dispose()
        self._redis.close()


def run_harness(workdir: Path, db_url: str, timing: FleetTiming = TEST_TIMING) -> Iterator[FleetHarness]:
    harness = FleetHarness(workdir, db_url, timing)
    try:
        yield harness
    finally:
        harness.stop_all()
        left = harness.leftover_pids()
        harness.close()
        assert not left, f"processes started by the workers outlived the test: {sorted(left)}"


@pytest.fixture
def fleet(tmp_path: Path, private_postgres_url: str) -> Iterator[FleetHarness]:
    """A fleet on a private database of the session's PostgreSQL; no worker outlives the test."""
    yield from run_harness(tmp_path, private_postgres_url)


def write_job(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
