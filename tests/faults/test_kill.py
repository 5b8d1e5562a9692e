"""kill -9 and SIGTERM of kbench during a local run and a suite run: no child survives
(checked by pid), the temporary directory is left empty, the run is marked.

kill -9 cannot be handled by kbench itself: its guardian process kills the children and
removes the scratch directories, and the next kbench marks the run ``abandoned`` and
stores the samples the probe streamed to the run's spill file (a suite run has no spill).
SIGTERM is handled like Ctrl-C: the samples taken so far are stored, the run is
``interrupted``, the exit status is 143.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kbench.contract.spill import spill_head
from kbench.store.db import Store
from tests.faults.conftest import (
    Sandbox,
    alive,
    assert_all_gone,
    descendants,
    kill_hard,
    run_rows,
    wait_for,
    wait_for_descendant,
    wait_for_running_row,
)

LONG_LOCAL_RUN = ("run", "syscall.getppid", "--duration", "120s", "--warmup", "0", "--json")
LONG_SUITE_RUN = ("run", "stress-ng.cpu", "-p", "timeout=120", "-p", "workers=2", "--json")


def _started(sandbox: Sandbox, args: tuple[str, ...], child: str) -> tuple[subprocess.Popen[str], list[int]]:
    proc = sandbox.start(*args)
    wait_for_descendant(proc.pid, child)
    wait_for_running_row(sandbox.db)
    time.sleep(2.0)  # let it measure (no warm-up: sampling starts once the timer is calibrated)
    return proc, descendants(proc.pid)


def _assert_abandoned_after_kill(sandbox: Sandbox, spilled_at_least: int = 0) -> int:
    """The run is shown and then stored ``abandoned``, with at least ``spilled_at_least``
    samples (what its spill held before the kill); returns the samples it has."""
    [(run_id, status, n, _)] = run_rows(sandbox.db)
    assert status == "running" and n == 0  # what kill -9 leaves in the file
    shown = json.loads(sandbox.run("results", "--json").stdout)
    assert [(r["id"], r["status"]) for r in shown] == [(run_id, "abandoned")]  # read-only: shown, not stored
    assert shown[0]["n_samples"] >= spilled_at_least
    assert run_rows(sandbox.db)[0][1:3] == ("running", 0)
    Store.open(f"sqlite:///{sandbox.db}")  # a writing kbench starts: it stores the verdict and the samples
    [(_, status, n, error)] = run_rows(sandbox.db)
    assert status == "abandoned" and error is not None and "ended without finishing" in error
    assert n == shown[0]["n_samples"] >= spilled_at_least
    return n


def _spilled_rows(sandbox: Sandbox) -> int:
    """The samples the only run's spill holds now."""
    [spill] = list((sandbox.db.parent / (sandbox.db.name + "-spill")).glob("run-*.spill"))
    head = spill_head(spill)
    return 0 if head is None else head.rows


def test_kill_9_during_a_local_run_leaves_no_probe_and_keeps_the_spilled_samples(sandbox: Sandbox) -> None:
    """Issue 27's "done means": kill -9 of `kbench run syscall.getppid --duration 30s` at 6 s."""
    started = time.monotonic()
    proc = sandbox.start("run", "syscall.getppid", "--duration", "30s", "--json")
    wait_for_descendant(proc.pid, "kbench-probe")
    wait_for_running_row(sandbox.db)
    wait_for(lambda: _spill_exists(sandbox) and _spilled_rows(sandbox) > 0, "samples in the run's spill")
    time.sleep(max(0.0, 6.0 - (time.monotonic() - started)))
    below = descendants(proc.pid)
    assert any(name == "kbench-probe" for name in map(_name, below))
    before_kill = _spilled_rows(sandbox)
    kill_hard(proc)
    assert_all_gone(below, "children of a kbench killed with SIGKILL")
    assert sandbox.leftovers() == []
    n = _assert_abandoned_after_kill(sandbox, spilled_at_least=max(before_kill, 1))
    shown = json.loads(sandbox.run("show", "1", "--json").stdout)
    assert shown["status"] == "abandoned" and shown["n"] == n
    assert list((sandbox.db.parent / (sandbox.db.name + "-spill")).iterdir()) == []


def _spill_exists(sandbox: Sandbox) -> bool:
    return any((sandbox.db.parent / (sandbox.db.name + "-spill")).glob("run-*.spill"))


def test_sigterm_during_a_local_run_keeps_the_samples(sandbox: Sandbox) -> None:
    proc, below = _started(sandbox, LONG_LOCAL_RUN, "kbench-probe")
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "kbench: stopped by SIGTERM" not in stdout
    run = json.loads(stdout)
    assert run["status"] == "interrupted" and run["n"] > 100
    assert_all_gone(below, "children of a kbench stopped with SIGTERM")
    assert sandbox.leftovers() == []
    [(run_id, status, n, _)] = run_rows(sandbox.db)
    assert (run_id, status, n) == (run["run_id"], "interrupted", run["n"])


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng is not installed")
def test_kill_9_during_a_suite_run_leaves_no_tool_or_worker(sandbox: Sandbox) -> None:
    proc, below = _started(sandbox, LONG_SUITE_RUN, "stress-ng")
    # stress-ng's workers are its children: the tool's whole process group must go.
    time.sleep(1.0)
    below = descendants(proc.pid)
    assert sum(_name(pid).startswith("stress-ng") for pid in below) >= 3, [_name(p) for p in below]
    kill_hard(proc)
    assert_all_gone(below, "stress-ng and its workers after kbench was killed with SIGKILL")
    assert sandbox.leftovers() == []
    _assert_abandoned_after_kill(sandbox)


@pytest.mark.skipif(shutil.which("stress-ng") is None, reason="stress-ng is not installed")
def test_sigterm_during_a_suite_run_stops_the_tool_and_marks_the_run_interrupted(sandbox: Sandbox) -> None:
    proc, _ = _started(sandbox, LONG_SUITE_RUN, "stress-ng")
    time.sleep(1.0)
    below = descendants(proc.pid)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert json.loads(stdout)["status"] == "interrupted"
    assert_all_gone(below, "stress-ng and its workers after SIGTERM")
    assert sandbox.leftovers() == []
    assert [status for _, status, _, _ in run_rows(sandbox.db)] == ["interrupted"]


def _name(pid: int) -> str:
    from tests.faults.conftest import command_name

    return command_name(pid)


def _guardians(kbench: int) -> list[int]:
    """kbench's guardian processes (children of kbench running _guardian.py)."""
    return [pid for pid in descendants(kbench) if b"_guardian.py" in _cmdline(pid) and alive(pid)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_kill_9_of_the_guardian_and_then_of_kbench_still_ends_the_probe(sandbox: Sandbox) -> None:
    """Issue 27 item 15: the second line of defence (PR_SET_PDEATHSIG) when the guardian is killed first."""
    proc, below = _started(sandbox, LONG_LOCAL_RUN, "kbench-probe")
    [guardian] = _guardians(proc.pid)
    probes = [pid for pid in below if _name(pid) == "kbench-probe"]
    proc.send_signal(signal.SIGSTOP)  # stopped, kbench cannot replace its guardian
    os.kill(guardian, signal.SIGKILL)
    kill_hard(proc)
    assert_all_gone(probes, "the probe of a kbench killed with SIGKILL after its guardian")


def test_a_killed_guardian_is_replaced_and_cleans_up_after_kbench(sandbox: Sandbox) -> None:
    proc, below = _started(sandbox, LONG_LOCAL_RUN, "kbench-probe")
    [guardian] = _guardians(proc.pid)
    os.kill(guardian, signal.SIGKILL)
    replacement: list[int] = []

    def replaced() -> bool:
        replacement[:] = [pid for pid in _guardians(proc.pid) if pid != guardian]
        return bool(replacement)

    wait_for(replaced, "a new guardian")  # it finds every child group and directory in its pipe as it starts
    kill_hard(proc)
    assert_all_gone(below, "children of a kbench killed with SIGKILL after its guardian was replaced")
    assert_all_gone(replacement, "the new guardian, once done")
    assert sandbox.leftovers() == []  # the probe's scratch directory: only a guardian removes it
