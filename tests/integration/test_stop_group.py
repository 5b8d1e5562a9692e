"""``children.finish`` stops a child's whole process group, not just its leader: when it
returns, no living process is left in the group (zombies aside: orphans are init's to reap).

Real processes: a shell leader and a worker of its group that ignores SIGTERM, as a tool's
per-test child may (netserver's was still alive, for a moment, after its leader was reaped).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from kbench import children
from tests.faults.conftest import alive

WORKER_READY_S = 30.0


def _living_in_group(pgid: int) -> list[int]:
    return [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc"))) if _group(pid) == pgid and alive(pid)]


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _start_leader_with_stubborn_worker(tmp_path: Path) -> subprocess.Popen[bytes]:
    ready = tmp_path / "ready"
    # The worker ignores SIGTERM (inherited by sleep across exec); the leader dies of it.
    script = f'sh -c \'trap "" TERM; touch {ready}; exec sleep 60\' & wait'
    proc = children.start(["sh", "-c", script])
    deadline = time.monotonic() + WORKER_READY_S
    while not ready.exists():
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.01)
    assert len(_living_in_group(proc.pid)) == 2
    return proc


def test_finish_leaves_no_living_process_in_the_group(tmp_path: Path) -> None:
    proc = _start_leader_with_stubborn_worker(tmp_path)
    children.finish(proc, grace=0.5)
    assert proc.returncode is not None
    assert _living_in_group(proc.pid) == []


def test_a_group_whose_members_all_ended_is_not_waited_for(tmp_path: Path) -> None:
    proc = children.start(["sh", "-c", "sleep 60"])
    children.finish(proc, grace=30.0)  # sh and sleep die of SIGTERM: no wait for the grace
    assert _living_in_group(proc.pid) == []
