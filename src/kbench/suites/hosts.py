"""Where a suite's tool runs: this machine (``LocalTools``) or any other place that can run a
process with a deadline (the VM target's guest implements the same interface).
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

from kbench import children
from kbench.suites.errors import SuiteError
from kbench.suites.process import Finished, run_process

VERSION_TIMEOUT_SECONDS = 10.0
SERVER_START_TIMEOUT_S = 10.0
TCP_TABLES = ("/proc/net/tcp", "/proc/net/tcp6")
_LISTEN = "0A"


def port_listening(tcp: str, tcp6: str, port: int) -> bool:
    """True if ``/proc/net/tcp`` or ``tcp6`` (their texts) show a socket listening on ``port``."""
    for table in (tcp, tcp6):
        for line in table.splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[3] == _LISTEN and fields[1].rsplit(":", 1)[-1] == f"{port:04X}":
                return True
    return False


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


class ToolHost(Protocol):
    """Runs a suite's tool: finds it, reads its version, runs it in a scratch directory."""

    where: str
    """``local`` or ``guest``: stored with the run."""

    def which(self, tool: str) -> str | None:
        """The tool's absolute path, or None if it is not there."""
        ...

    def version_output(self, tool_path: str, args: tuple[str, ...]) -> str:
        """What ``tool_path args`` prints (stdout + stderr); empty if it cannot run."""
        ...

    def scratch_dir(self, prefix: str) -> AbstractContextManager[str]:
        """A fresh directory for the tool's files, removed afterwards."""
        ...

    def run(self, argv: list[str], *, executable: str, cwd: str, timeout: float) -> Finished:
        """Run ``argv`` (argv[0] resolved to ``executable``) in ``cwd`` with LC_ALL=C and no stdin.

        Killed with its children after ``timeout`` seconds (``timed_out``); Ctrl-C stops it
        and is re-raised.
        """
        ...

    def start_server(self, argv: list[str], *, executable: str, port: int) -> None:
        """Start the daemon the tool talks to (netperf's netserver), in the foreground form
        ``argv``; returns once it listens on TCP ``port`` (SuiteError if it does not)."""
        ...

    def stop_server(self, executable: str) -> None:
        """Stop what ``start_server`` started."""
        ...


def innermost(host: ToolHost) -> ToolHost:
    """The place ``host`` runs tools, under the wrappers that count, record or monitor each tool run (each
    keeps the host it wraps as ``host``): their own commands (reading perf's output, a suite's set-up) run
    there, neither counted nor monitored."""
    inner = getattr(host, "host", None)
    while inner is not None:
        host, inner = inner, getattr(inner, "host", None)
    return host


class LocalTools:
    """The machine kbench runs on."""

    where = "local"

    def __init__(self) -> None:
        self._servers: dict[str, subprocess.Popen[bytes]] = {}

    def which(self, tool: str) -> str | None:
        return shutil.which(tool)

    def version_output(self, tool_path: str, args: tuple[str, ...]) -> str:
        try:
            done = children.run(
                [tool_path, *args], capture_output=True, text=True, errors="replace", timeout=VERSION_TIMEOUT_SECONDS
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return str(done.stdout) + str(done.stderr)

    @contextmanager
    def _scratch(self, prefix: str) -> Iterator[str]:
        with children.scratch_dir(prefix) as scratch:
            yield str(scratch)

    def scratch_dir(self, prefix: str) -> AbstractContextManager[str]:
        return self._scratch(prefix)

    def run(self, argv: list[str], *, executable: str, cwd: str, timeout: float) -> Finished:
        from pathlib import Path

        return run_process(argv, executable=executable, cwd=Path(cwd), timeout=timeout)

    def start_server(self, argv: list[str], *, executable: str, port: int) -> None:
        # A child of kbench in its own session, so it dies with kbench even on SIGKILL.
        proc = children.start(argv, executable=executable, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._servers[executable] = proc
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while not port_listening(_read(TCP_TABLES[0]), _read(TCP_TABLES[1]), port):
            if proc.poll() is not None or time.monotonic() > deadline:
                self.stop_server(executable)
                said = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else ""
                raise SuiteError(f"{argv[0]} did not start listening on port {port}: {said or 'no message'}")
            time.sleep(0.05)

    def stop_server(self, executable: str) -> None:
        proc = self._servers.pop(executable, None)
        if proc is not None:
            children.finish(proc)
