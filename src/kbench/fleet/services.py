"""Throw-away PostgreSQL and Redis servers on 127.0.0.1 (``kbench fleet demo`` and the tests).

Debian's binaries, files in a temp dir, a free port chosen by the kernel, listening on one
address only: 127.0.0.1, or the private bridge of ``kbench fleet demo --isolated``
(``host``; PostgreSQL then also trusts that bridge's network, ``clients``). Each server
is stopped (and waited for) when its owner is done with it, and dies with the process
that started it even if that one is killed (``setpriv --pdeathsig``, applied after
PostgreSQL's switch to the ``postgres`` account; and the servers are children registered
with kbench's guardian, ``kbench.children``, which also removes a PostgreSQL cluster's temp dir after kill -9).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kbench import children
from kbench.exit_codes import KbenchError

LOOPBACK = "127.0.0.1"
POSTGRES_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


class ServiceUnavailable(KbenchError, RuntimeError):
    """The server's binaries are not installed (scripts/install-deps.sh installs them), or
    the server could not be set up here (the message says why)."""


def free_port(host: str = LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes] | None = None, *,
                  host: str = LOOPBACK) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening on {host}:{port}")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout:.0f} s")


def _dies_with_us(signal_name: str, *, user: str | None = None) -> list[str]:
    """A command prefix: run as ``user`` (if given), receive ``signal_name`` when we die."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise ServiceUnavailable("setpriv not found: install Debian's util-linux package")
    account = ["--reuid", user, "--regid", user, "--init-groups"] if user else []
    return [setpriv, *account, f"--pdeathsig={signal_name}", "--"]


def _stop(server: subprocess.Popen[bytes], timeout: float = 30, how: int = signal.SIGTERM) -> None:
    if server.poll() is None:
        server.send_signal(how)
    try:
        server.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _postgres_bin(name: str) -> str:
    for directory in POSTGRES_BIN_DIRS:
        if (directory / name).is_file():
            return str(directory / name)
    raise ServiceUnavailable(f"PostgreSQL's {name} not found: install Debian's postgresql package")


def _postgres_account() -> str | None:
    """initdb and postgres refuse to run as root: run them as the ``postgres`` account then."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise ServiceUnavailable("running as root and there is no postgres account to run PostgreSQL as") from exc
    return "postgres"


class PostgresServer:
    """A throw-away PostgreSQL cluster that can be stopped and started again on its port.

    ``url`` is a SQLAlchemy URL (psycopg 3) of database ``database``, user ``kbench``,
    trust authentication on ``host`` (127.0.0.1 unless given), from there and from the
    network ``clients`` (a CIDR, e.g. a private bridge's). The log goes to ``workdir/postgres.log``. As
    root the cluster lives in a directory of its own under the system temp dir, owned
    by ``postgres`` (a 0700 root temp dir would lock it out), removed by ``close``.
    """

    def __init__(self, workdir: Path, *, database: str = "kbench", host: str = LOOPBACK, clients: str | None = None):
        workdir = workdir.resolve()  # the server runs in another directory
        self.workdir = workdir
        self.database = database
        self.host = host
        self.clients = clients
        self.account = _postgres_account()
        workdir.mkdir(parents=True, exist_ok=True)
        self.home = children.make_scratch_dir("kbench-pg-") if self.account else workdir
        self.data = self.home / "data"
        self.sockets = self.home / "sockets"
        self.port = free_port(host)
        self.url = f"postgresql+psycopg://kbench@{host}:{self.port}/{database}"
        self.process: subprocess.Popen[bytes] | None = None
        self._as_account = ["runuser", "-u", self.account, "--"] if self.account else []

    def initialise(self) -> None:
        self.sockets.mkdir(exist_ok=True)
        if self.account:
            for path in (self.home, self.sockets):
                shutil.chown(path, self.account, self.account)
        made = children.run([*self._as_account, _postgres_bin("initdb"), "-D", str(self.data), "-U", "kbench",
                             "--auth=trust", "-E", "UTF8", "--no-sync"], capture_output=True, text=True, cwd=self.home)
        if made.returncode != 0:
            said = " ".join((made.stderr or made.stdout or "").strip().splitlines()[-1:])
            hint = (f" (PostgreSQL runs as {self.account}, who must be able to reach {self.home}: "
                    "check the modes of $TMPDIR and its parents)") if self.account else ""
            raise ServiceUnavailable(f"PostgreSQL's initdb failed in {self.data}: {said}{hint}")
        if self.clients:
            with open(self.data / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {self.clients} trust\n")

    def start(self) -> None:
        """Start the server (again) on its port and wait until it accepts connections."""
        with open(self.workdir / "postgres.log", "ab") as log:
            self.process = children.start(
                [*_dies_with_us("INT", user=self.account), _postgres_bin("postgres"), "-D", str(self.data),
                 "-p", str(self.port), "-k", str(self.sockets), "-c", f"listen_addresses={self.host}",
                 "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off"],
                stdout=subprocess.DEVNULL, stderr=log, cwd=self.home,
            )
        wait_for_port(self.port, 60, self.process, host=self.host)
        deadline = time.monotonic() + 30
        while True:  # the port opens a moment before the server accepts connections
            ready = subprocess.run([_postgres_bin("pg_isready"), "-h", self.host, "-p", str(self.port)],
                                   capture_output=True)
            if ready.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL on port {self.port} is not ready after 30 s")
            time.sleep(0.1)

    def create_database(self) -> None:
        made = children.run([*self._as_account, _postgres_bin("createdb"), "-h", self.host, "-p", str(self.port),
                             "-U", "kbench", self.database], capture_output=True, text=True, cwd=self.home)
        if made.returncode != 0:
            raise RuntimeError(f"createdb failed: {made.stderr.strip()}")

    def stop(self) -> None:
        """Stop the server: SIGINT, PostgreSQL's fast shutdown (clients are disconnected); SIGKILL after 30 s."""
        if self.process is not None:
            _stop(self.process, how=signal.SIGINT)
            children.finish(self.process)
            self.process = None

    def close(self) -> None:
        self.stop()
        if self.home != self.workdir:
            children.remove_scratch_dir(self.home)


@contextmanager
def postgres_server(workdir: Path, *, database: str = "kbench") -> Iterator[str]:
    """A throw-away PostgreSQL cluster for the block; yields its SQLAlchemy URL."""
    with running_postgres(workdir, database=database) as server:
        yield server.url


@contextmanager
def running_postgres(
    workdir: Path, *, database: str = "kbench", host: str = LOOPBACK, clients: str | None = None,
) -> Iterator[PostgresServer]:
    """A started ``PostgresServer`` with ``database`` created; closed when the block ends."""
    server = PostgresServer(workdir, database=database, host=host, clients=clients)
    try:
        server.initialise()
        server.start()
        server.create_database()
        yield server
    finally:
        server.close()


@contextmanager
def redis_server(
    workdir: Path, *, port: int | None = None, persistent: bool = False, host: str = LOOPBACK,
) -> Iterator[str]:
    """A Redis server with its files in ``workdir``; yields a ``redis://`` URL.

    Give ``port`` to restart a server on the port a stopped one had (a broker restart);
    ``persistent`` keeps every write in an append-only file there (``appendfsync
    always``), so a restarted server has the queues and unacknowledged messages back.
    """
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServiceUnavailable("redis-server not found: install Debian's redis-server package")
    workdir = workdir.resolve()  # redis-server opens --logfile after changing to --dir
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port(host)
    # Protected mode admits loopback clients only: on a private bridge (bound to its address
    # alone) the clients are the bridge's namespaces.
    protected = "yes" if host == LOOPBACK else "no"
    durability = ["--appendonly", "yes", "--appendfsync", "always"] if persistent else ["--appendonly", "no"]
    server = children.start(
        [*_dies_with_us("TERM"), binary, "--bind", host, "--port", str(port), "--dir", str(workdir),
         "--save", "", *durability, "--protected-mode", protected, "--logfile", str(workdir / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, 30, server, host=host)
        yield f"redis://{host}:{port}/0"
    finally:
        _stop(server)
        children.finish(server)
