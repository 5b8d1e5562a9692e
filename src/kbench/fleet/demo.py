"""``kbench fleet demo``: a whole fleet on this machine — Redis, PostgreSQL and two workers.

Everything lives in one directory (a temp dir unless given): the servers' files, the
fleet config (mode 0600) and each worker's log. The servers and workers die with the
process that started them, and are stopped in order when it ends.

``isolated`` (as root): each worker in network and mount namespaces of its own, the
servers on a private bridge, the submitter's files out of the workers' sight
(``kbench.fleet.isolation``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from kbench.exit_codes import KbenchError
from kbench.fleet.database import fleet_engine
from kbench.fleet.isolation import Namespace, PrivateNetwork, hidden_paths, isolated_command, kept_paths
from kbench.fleet.services import redis_server, running_postgres
from kbench.fleet.settings import FleetTiming
from kbench.store.fleet import FleetStore

DEMO_CLASSES = ("demo-a", "demo-b")
DEMO_TIMING = FleetTiming(heartbeat_s=1.0, lease_s=10.0, visibility_timeout_s=600.0, db_retry_s=120.0)


@dataclass(frozen=True)
class DemoWorker:
    name: str
    machine_class: str
    process: subprocess.Popen[bytes]
    log: Path
    namespace: Namespace | None = None


def write_config(path: Path, *, db: str, broker: str, timing: FleetTiming) -> None:
    """A fleet config file readable by its owner only."""
    lines = [f'db = "{db}"', f'broker = "{broker}"', "", "[timing]"]
    lines += [f"{name} = {value!r}" for name, value in vars(timing).items()]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.chmod(path, 0o600)


def start_worker(
    config: Path, *, name: str, machine_class: str, log: Path, extra: Sequence[str] = (),
    env: dict[str, str] | None = None, cwd: Path | None = None, wrap: Callable[[list[str]], list[str]] | None = None,
) -> subprocess.Popen[bytes]:
    """``kbench worker`` as a child process that dies with this one, its output in ``log``, in ``cwd``;
    ``wrap`` makes the command that runs it (e.g. in namespaces)."""
    setpriv = shutil.which("setpriv")
    prefix = [setpriv, "--pdeathsig=TERM", "--"] if setpriv else []
    environment = {**os.environ, **(env or {}), "KBENCH_FLEET_CONFIG": str(config)}
    for variable in ("KBENCH_DB", "KBENCH_BROKER"):
        environment.pop(variable, None)
    command = [sys.executable, "-m", "kbench.cli", "worker", "--queue", machine_class, "--name", name, *extra]
    with open(log, "ab") as out:
        return subprocess.Popen(
            [*prefix, *(wrap(command) if wrap else command)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=environment, cwd=cwd,
        )


def stop_process(process: subprocess.Popen[bytes], timeout: float = 60, *, signalled: bool = False) -> None:
    """SIGTERM (a worker finishes its task first; not again if ``signalled``), SIGKILL after ``timeout``."""
    if process.poll() is None and not signalled:
        process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_for_machines(db_url: str, names: Sequence[str], *, timing: FleetTiming, timeout: float = 90,
                      workers: Sequence[DemoWorker] = ()) -> None:
    """Until every machine in ``names`` has registered (RuntimeError with a log tail if a worker dies)."""
    engine = fleet_engine(db_url)
    fleet = FleetStore(engine, lease_s=timing.lease_s)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for worker in workers:
                if worker.process.poll() is not None:
                    tail = worker.log.read_text(errors="replace")[-2000:] if worker.log.exists() else ""
                    raise DemoFailed(f"worker {worker.name} exited with {worker.process.returncode}:\n{tail}")
            try:
                seen = {m["name"] for m in fleet.machines() if m["state"] in ("idle", "busy")}
            except Exception:  # the schema may not exist before the first worker creates it
                seen = set()
            if set(names) <= seen:
                return
            time.sleep(0.2)
        raise DemoFailed(f"machines {', '.join(names)} did not register within {timeout:.0f} s")
    finally:
        engine.dispose()


class DemoFailed(KbenchError, RuntimeError):
    """The local fleet did not come up (a worker died at start, or never registered)."""


def demo_classes(workers: int) -> tuple[str, ...]:
    """The class of each of ``workers`` demo workers: demo-a, demo-b, demo-a, ..."""
    return tuple(DEMO_CLASSES[index % len(DEMO_CLASSES)] for index in range(workers))


class LocalFleet:
    """Redis (append-only file), PostgreSQL and one worker per entry of ``classes`` (its class),
    in ``workdir``; ``isolated``: see the module doc (``hide``: more of the submitter's
    directories the workers must not see, e.g. the job file's)."""

    def __init__(self, workdir: Path, *, classes: Sequence[str] = DEMO_CLASSES, timing: FleetTiming = DEMO_TIMING,
                 isolated: bool = False, hide: Sequence[Path] = ()):
        self.workdir = workdir
        self.worker_classes = tuple(classes)
        self.classes = tuple(dict.fromkeys(classes))
        self.timing = timing
        self.isolated = isolated
        self.hide = tuple(hide)
        self.network: PrivateNetwork | None = None
        self.config = workdir / "fleet.toml"
        self.db_url = ""
        self.broker_url = ""
        self.workers: list[DemoWorker] = []
        self._stack = ExitStack()

    def __enter__(self) -> LocalFleet:
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
            host, clients = "127.0.0.1", None
            if self.isolated:
                self.network = self._stack.enter_context(PrivateNetwork())
                host, clients = self.network.address, self.network.cidr
            postgres = self._stack.enter_context(
                running_postgres(self.workdir / "postgres", host=host, clients=clients))
            self.db_url = postgres.url
            self.broker_url = self._stack.enter_context(
                redis_server(self.workdir / "redis", persistent=True, host=host))
            write_config(self.config, db=self.db_url, broker=self.broker_url, timing=self.timing)
            self._stack.callback(self._stop_workers)
            hide = hidden_paths([self.workdir, *self.hide]) if self.isolated else []
            keep = kept_paths() if self.isolated else []
            for index, machine_class in enumerate(self.worker_classes, start=1):
                name = f"demo-{index}"
                log = self.workdir / f"{name}.log"
                namespace = self.network.add_namespace() if self.network else None
                wrap = None
                if namespace is not None:
                    def wrap(argv: list[str], namespace: Namespace = namespace) -> list[str]:
                        return isolated_command(argv, namespace=namespace, hide=hide, keep=keep, config=self.config)
                # Isolated workers see nothing of the submitter's: they may run command benchmarks.
                extra = ["--allow-command"] if self.isolated else []
                process = start_worker(self.config, name=name, machine_class=machine_class, log=log, wrap=wrap,
                                       extra=extra)
                self.workers.append(DemoWorker(name, machine_class, process, log, namespace))
            wait_for_machines(self.db_url, [w.name for w in self.workers], timing=self.timing, workers=self.workers)
        except BaseException:
            self._stack.close()
            raise
        return self

    def _stop_workers(self) -> None:
        for worker in self.workers:
            if worker.process.poll() is None:
                worker.process.terminate()
        for worker in self.workers:
            stop_process(worker.process, signalled=True)

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self._stack.close()
