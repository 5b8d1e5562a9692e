"""Real PostgreSQL and Redis servers for tests: Debian's binaries, a temp dir, 127.0.0.1 only.

Each server runs on a free random port chosen by the kernel, is owned by the context
manager that started it and is stopped (and waited for) when the block ends, whatever
happened inside. Nothing here ever listens on another address.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOOPBACK = "127.0.0.1"
POSTGRES_BIN_DIRS = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)


class ServiceUnavailable(RuntimeError):
    """The server's binaries are not installed (scripts/install-deps.sh installs them)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float, process: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode} before listening on {LOOPBACK}:{port}")
        try:
            with socket.create_connection((LOOPBACK, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {LOOPBACK}:{port} after {timeout:.0f} s")


def _postgres_bin(name: str) -> str:
    for directory in POSTGRES_BIN_DIRS:
        if (directory / name).is_file():
            return str(directory / name)
    raise ServiceUnavailable(f"PostgreSQL's {name} not found: install Debian's postgresql package")


def _as_postgres_user() -> list[str]:
    """initdb and postgres refuse to run as root: run them as the ``postgres`` account then."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError as exc:
        raise ServiceUnavailable("running as root and there is no postgres account to run PostgreSQL as") from exc
    return ["runuser", "-u", "postgres", "--"]


@contextmanager
def postgres_server(workdir: Path, *, database: str = "kbench") -> Iterator[str]:
    """A throw-away PostgreSQL cluster; yields a SQLAlchemy URL (psycopg 3).

    The log goes to ``workdir``. As root the cluster lives in a directory of its own under
    the system temp dir, owned by ``postgres`` (pytest's temp dirs are 0700 root), removed
    at the end."""
    initdb, postgres, createdb = _postgres_bin("initdb"), _postgres_bin("postgres"), _postgres_bin("createdb")
    runas = _as_postgres_user()
    workdir.mkdir(parents=True, exist_ok=True)
    home = Path(tempfile.mkdtemp(prefix="kbench-pg-")) if runas else workdir
    data, sockets = home / "data", home / "sockets"
    sockets.mkdir(exist_ok=True)
    if runas:
        for path in (home, sockets):
            shutil.chown(path, "postgres", "postgres")
    subprocess.run([*runas, initdb, "-D", str(data), "-U", "kbench", "--auth=trust", "-E", "UTF8",
                    "--no-sync"], check=True, capture_output=True)
    port = free_port()
    log = open(workdir / "postgres.log", "wb")  # noqa: SIM115  (closed in the finally below)
    server = subprocess.Popen(
        [*runas, postgres, "-D", str(data), "-p", str(port), "-k", str(sockets), "-c", f"listen_addresses={LOOPBACK}",
         "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off"],
        stdout=subprocess.DEVNULL, stderr=log,
    )
    try:
        wait_for_port(port, 60, server)
        deadline = time.monotonic() + 30
        while True:  # the port opens a moment before the server accepts connections
            made = subprocess.run([*runas, createdb, "-h", LOOPBACK, "-p", str(port), "-U", "kbench", database],
                                  capture_output=True, text=True)
            if made.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"createdb failed: {made.stderr.strip()}")
            time.sleep(0.1)
        yield f"postgresql+psycopg://kbench@{LOOPBACK}:{port}/{database}"
    finally:
        server.terminate()  # SIGTERM: PostgreSQL's "smart" shutdown; SIGINT is "fast"
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        if home != workdir:
            shutil.rmtree(home, ignore_errors=True)


@contextmanager
def redis_server(workdir: Path, *, port: int | None = None) -> Iterator[str]:
    """A Redis server with its files in ``workdir``, no persistence; yields a ``redis://`` URL.

    Give ``port`` to restart a server on the port a stopped one had (a broker restart)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServiceUnavailable("redis-server not found: install Debian's redis-server package")
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    server = subprocess.Popen(
        [binary, "--bind", LOOPBACK, "--port", str(port), "--dir", str(workdir), "--save", "",
         "--appendonly", "no", "--protected-mode", "yes", "--logfile", str(workdir / "redis.log")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, 30, server)
        yield f"redis://{LOOPBACK}:{port}/0"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
