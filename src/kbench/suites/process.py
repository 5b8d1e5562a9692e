"""Run one tool process to completion, with a deadline, and never leave its children behind."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kbench import children

# After SIGTERM, how long the tool gets to stop its workers before SIGKILL.
TERMINATE_GRACE_SECONDS = 3.0


@dataclass(frozen=True)
class Finished:
    """How one process ended. ``exit_code`` is None when it was killed at the deadline."""

    stdout: str
    stderr: str
    exit_code: int | None
    wall_seconds: float
    timed_out: bool


def run_process(argv: list[str], *, executable: str, cwd: Path, timeout: float) -> Finished:
    """Run ``argv`` (``argv[0]`` resolved to ``executable``) in ``cwd`` in its own session.

    The tool gets ``LC_ALL=C`` (so numbers print with a decimal point) and no stdin. It
    and its workers die with kbench, even if kbench is killed (``kbench.children``).
    At ``timeout`` seconds, and on KeyboardInterrupt (Ctrl-C or SIGTERM, re-raised), its
    whole process group is sent SIGTERM, then SIGKILL after TERMINATE_GRACE_SECONDS.
    """
    env = dict(os.environ, LC_ALL="C")
    started = time.monotonic()
    with children.spawn(
        argv,
        executable=executable,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            stdout, stderr = _stop_group(proc)
            return Finished(stdout, stderr, None, time.monotonic() - started, timed_out=True)
        except BaseException:
            _stop_group(proc)
            raise
        return Finished(stdout, stderr, proc.returncode, time.monotonic() - started, timed_out=False)


def _stop_group(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """SIGTERM the process group, SIGKILL it if still alive after the grace time."""
    children.signal_group(proc, signal.SIGTERM)
    try:
        return proc.communicate(timeout=TERMINATE_GRACE_SECONDS)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        children.signal_group(proc, signal.SIGKILL)
        return proc.communicate()
