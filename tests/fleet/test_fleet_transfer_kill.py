"""A worker killed -9 in the middle of fetching a job's input: the partial file is never used,
and the next attempt fetches the input again, checked (real Redis, PostgreSQL, ``kbench worker``)."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import time
from pathlib import Path

from tests.fleet.conftest import FleetHarness, alive, wait_until, write_job

SIZE = 48 << 20
"""Big enough (48 chunks of 1 MiB that do not compress) for a fetch to be caught half way."""
JOB = """\
benchmark: command
files: [prog, data.bin]
params:
  cmd: ./prog
samples: 3
warmup: 0
"""


def _partial(folder: Path, digest: str) -> tuple[Path, int] | None:
    """A fetch of ``digest`` under way (``DIGEST.partPID``) with some but not all of its bytes."""
    for path in folder.glob(f"{digest}.part*") if folder.is_dir() else ():
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            continue
        if (1 << 20) <= size < SIZE:
            return path, size
    return None


def test_a_worker_killed_during_a_transfer_never_uses_the_partial_file(fleet: FleetHarness, tmp_path: Path) -> None:
    folder = tmp_path / "submitter"
    folder.mkdir()
    data = random.Random(354).randbytes(SIZE)
    (folder / "data.bin").write_bytes(data)
    (folder / "prog").write_text(f'#!/bin/sh\ntest "$(wc -c < data.bin)" -eq {SIZE}\n')  # fails on a partial file
    (folder / "prog").chmod(0o755)
    job_file = write_job(folder / "job.yaml", JOB)
    digest = hashlib.sha256(data).hexdigest()
    home = tmp_path / "far-1"
    (home / "cwd").mkdir(parents=True)
    env = {"XDG_CACHE_HOME": str(home / "cache")}
    inputs = home / "cache" / "kbench" / "fleet" / "inputs" / digest[:2]

    job = fleet.submit(job_file, "--queue", "far")  # first, so that the fetch starts while we watch
    worker = fleet.start_worker("far-1", "far", "--allow-command", cwd=home / "cwd", env=env, wait=False)
    caught = wait_until(lambda: _partial(inputs, digest) or (inputs / digest).exists(), poll=0.002,
                        what="the fetch of data.bin to begin")
    assert caught is not True, "the whole fetch went by between two looks 2 ms apart"
    partial, _ = caught
    worker.note_pids()
    pool = int(partial.name.rpartition(".part")[2])  # the pool process fetching it
    os.kill(pool, signal.SIGSTOP)  # hold it half way, then kill the machine: worker and pool process
    fleet.kill9(worker)
    os.kill(pool, signal.SIGKILL)
    wait_until(lambda: not alive(pool), timeout=30, what="the pool process to die")
    left = partial.stat().st_size
    assert 0 < left < SIZE, f"the fetch was caught with {left} bytes of {SIZE}"
    assert not (inputs / digest).exists()  # only a whole, checked file gets the digest's name
    (task,) = fleet.tasks(job)
    assert task["state"] == "running" and task["attempts"] == 1

    # The machine comes back with its cache: the task's lease runs out, it is queued again, and
    # the new attempt fetches data.bin again (the program it already had is reused, checked). It
    # comes back after a lease: a name seen alive within the lease is refused (MachineNameTaken).
    time.sleep(fleet.timing.lease_s + 0.5)
    fleet.start_worker("far-1", "far", "--allow-command", cwd=home / "cwd", env=env)
    assert fleet.wait_job(job) == "done"
    (task,) = fleet.tasks(job)
    assert task["attempts"] == 2 and task["machine"] == "far-1" and "was lost" in task["errors"][0]["error"]
    runs = fleet.runs_of(task["id"])
    assert [(r["status"], r["task_key"], r["n_samples"]) for r in runs] == [("complete", f"{task['id']}#0", 3)]
    assert task["run_ids"] == [runs[0]["id"]]
    assert not partial.exists()  # the dead process's partial fetch was removed, never read
    assert hashlib.sha256((inputs / digest).read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in inputs.iterdir()) == [digest]
    log = fleet.log_tail(fleet.workers["far-1"], 10**6)
    assert log.count(f"input {digest} (data.bin): fetched, {SIZE} bytes, digest checked") == 1
    assert log.count("(prog): fetched") == 1  # fetched whole by the first attempt, kept
