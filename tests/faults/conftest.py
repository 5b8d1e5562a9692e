"""Fault injection: the real ``kbench`` command killed, starved of disk, fed damaged files.

Every test runs kbench as a subprocess with a private temporary directory (``TMPDIR``),
database, recovery directory and tune state, so that what it leaves behind (processes,
files, rows) can be checked exactly.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kbench.procfs import is_living

#: generous bounds for things that must happen, not speed goals (the machine is shared)
SETTLE_S = 60.0


@dataclass
class Sandbox:
    """Where one kbench invocation may write."""

    root: Path
    db: Path
    tmp: Path
    recovery: Path

    def env(self, **extra: str) -> dict[str, str]:
        env = dict(os.environ, KBENCH_DB=str(self.db), TMPDIR=str(self.tmp), KBENCH_RECOVERY_DIR=str(self.recovery),
                   XDG_STATE_HOME=str(self.root / "state"), COLUMNS="200")
        env.pop("KBENCH_OWNER", None)
        env.update(extra)
        return env

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "kbench.cli", *args]

    def run(self, *args: str, timeout: float = 300, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.argv(*args), capture_output=True, text=True, timeout=timeout,
                              env=env or self.env())

    def invoke(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run the kbench command in this process (no interpreter start: for the many
        cases refused before anything runs). Exit status, stdout and stderr as from run()."""
        from click.testing import CliRunner

        from kbench.cli.main import cli

        runner = CliRunner()
        result = runner.invoke(cli, list(args), env=env or self.env(), prog_name="kbench")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return subprocess.CompletedProcess(["kbench", *args], result.exit_code, result.stdout, result.stderr)

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(self.argv(*args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=self.env())

    def leftovers(self) -> list[str]:
        """What kbench left in its temporary directory."""
        return sorted(p.name for p in self.tmp.iterdir())


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(root=tmp_path, db=tmp_path / "results.db", tmp=tmp_path / "tmp", recovery=tmp_path / "recovery")
    box.tmp.mkdir()
    return box


def children_of(pid: int) -> list[int]:
    found = []
    for tasks in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(child) for child in tasks.read_text().split()]
        except OSError:
            continue
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children...)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children_of(todo.pop()):
            if child not in found:
                found.append(child)
                todo.append(child)
    return found


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie waiting to be reaped."""
    return is_living(pid)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = SETTLE_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout:.0f} s")
        time.sleep(0.05)


def wait_for_descendant(pid: int, name: str, timeout: float = SETTLE_S) -> int:
    """The pid of a process called ``name`` below ``pid``, once there is one."""
    found: list[int] = []

    def present() -> bool:
        found[:] = [p for p in descendants(pid) if command_name(p) == name]
        return bool(found)

    wait_for(present, f"a {name} process under kbench", timeout)
    return found[0]


def assert_all_gone(pids: list[int], what: str) -> None:
    """Every process in ``pids`` ends (is killed) within SETTLE_S seconds."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        living = [p for p in pids if alive(p)]
        if not living:
            return
        time.sleep(0.1)
    described = ", ".join(f"{p} ({command_name(p)})" for p in pids if alive(p))
    raise AssertionError(f"{what}: still running: {described}")


def run_rows(db: Path) -> list[tuple[int, str, int, str | None]]:
    """(id, status, n_samples, error) of every stored run, read with sqlite3 directly."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        return list(conn.execute("select id, status, n_samples, error from runs order by id"))


def wait_for_running_row(db: Path, timeout: float = SETTLE_S * 4) -> None:
    def present() -> bool:
        if not db.exists():
            return False
        try:
            return any(status == "running" for _, status, _, _ in run_rows(db))
        except sqlite3.Error:
            return False

    wait_for(present, "a run row with status running", timeout)


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def kill_hard(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=SETTLE_S)


@pytest.fixture
def private_mounts() -> Iterator[list[str]]:
    """The argv prefix that runs a shell in a private mount namespace (root, or an
    unprivileged user namespace); skips when neither is available here."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    prefix = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        prefix = ["unshare", "--user", "--map-root-user", "--mount"]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot make a private mount namespace here: {probe.stderr.strip()}")
    yield prefix
