"""The smaller hostile cases of issue 34: each ends in one clear line with a documented exit
code, or in a clean outcome that says what it found, and changes nothing it should not."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from pathlib import Path

import pytest

from kbench.contract.spill import spill_head
from kbench.store.db import Store
from tests.faults.conftest import (
    Sandbox,
    kill_hard,
    run_rows,
    wait_for,
    wait_for_descendant,
    wait_for_running_row,
)


@pytest.mark.parametrize("option", [("--duration", "1s"), ("--warmup", "0.5s")])
def test_a_kfunc_duration_is_refused_before_a_guest_boots_or_a_run_is_stored(
    sandbox: Sandbox, option: tuple[str, str]
) -> None:
    sandbox.run("run", "syscall.getppid", "--samples", "100")
    done = sandbox.invoke("run", "kfunc.empty", *option, "--kernel", "deb:6.1.0-56-amd64")
    assert [status for _, status, _, _ in run_rows(sandbox.db)] == ["complete"]  # no `failed` run of it
    assert sandbox.leftovers() == []
    assert done.returncode == 2, done
    label = "duration" if option[0] == "--duration" else "warm-up duration"
    assert done.stderr == ("kbench: error: kfunc benchmarks run inside the kernel and are count-based: give a count "
                           f"of samples (--samples) and of warm-up samples, not a {label}\n")


def test_a_kfunc_duration_in_a_job_file_is_one_of_its_problems(sandbox: Sandbox) -> None:
    job = sandbox.root / "job.yaml"
    job.write_text("benchmark: kfunc.empty\nkernel: deb:6.1.0-56-amd64\nduration: 2s\n")
    done = sandbox.invoke("run", str(job))
    assert not sandbox.db.exists()
    assert done.returncode == 2, done
    assert f"{job}:3: duration: kfunc.empty: kfunc benchmarks run inside the kernel and are count-based" in done.stderr


def test_history_since_a_moment_after_every_run_says_so(sandbox: Sandbox) -> None:
    assert sandbox.run("run", "syscall.getppid", "--samples", "100").returncode == 0
    done = sandbox.invoke("history", "--since", "2099-01-01")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "no complete runs stored since 2099-01-01 00:00 UTC (that is in the future)\n"
    named = sandbox.invoke("history", "syscall.getppid", "--since", "2099-01-01")
    assert named.returncode == 4
    assert named.stderr.startswith("kbench: error: no series matches 'syscall.getppid' with runs since 2099-01-01 "
                                   "00:00 UTC")
    assert "syscall.getppid.latency" in sandbox.invoke("history", "--since", "2000-01-01").stdout


def _spill_dir(sandbox: Sandbox) -> Path:
    return sandbox.db.parent / (sandbox.db.name + "-spill")


def _killed_with_a_spill(sandbox: Sandbox) -> Path:
    """A local run killed with -9 after its probe spilled samples: its spill file."""
    proc = sandbox.start("run", "syscall.getppid", "--duration", "30s")
    wait_for_descendant(proc.pid, "kbench-probe")
    wait_for_running_row(sandbox.db)

    def spilled() -> bool:
        found = list(_spill_dir(sandbox).glob("run-*.spill"))
        head = spill_head(found[0]) if found else None
        return head is not None and head.rows > 0

    wait_for(spilled, "samples in the run's spill")
    kill_hard(proc)
    [spill] = _spill_dir(sandbox).glob("run-*.spill")
    return spill


@pytest.mark.parametrize(("damage", "why"), [
    (b'{"spill": tru', "its header is not JSON"),
    (b"", "its header line is cut short (6 bytes, no end of line)"),
])
def test_a_damaged_spill_is_kept_aside_and_named(sandbox: Sandbox, damage: bytes, why: str) -> None:
    spill = _killed_with_a_spill(sandbox)
    data = spill.read_bytes()
    damaged = damage + data[data.index(b"\n"):] if damage else data[:6]
    spill.write_bytes(damaged)
    done = sandbox.run("run", "syscall.getppid", "--samples", "100")  # a writing kbench: it stores run 1
    assert done.returncode == 0, done.stderr
    aside = spill.with_name(spill.name + ".damaged")
    note = f"the spill file {spill} of run 1 is damaged ({why}"
    assert f"warning: {note}" in done.stderr and f"the file is kept as {aside}" in done.stderr
    assert aside.read_bytes() == damaged and not spill.exists()
    assert [(i, status, n) for i, status, n, _ in run_rows(sandbox.db)] == [(1, "abandoned", 0), (2, "complete", 100)]
    with sqlite3.connect(sandbox.db) as conn:
        (warnings,) = conn.execute("select warnings from runs where id = 1").fetchone()
    assert note in warnings
    again = sandbox.run("run", "syscall.getppid", "--samples", "100")
    assert again.returncode == 0 and "warning: the spill file" not in again.stderr  # said once, not at every open


def test_a_damaged_spill_of_a_run_that_failed_is_kept_aside(sandbox: Sandbox) -> None:
    store = Store.open(f"sqlite:///{sandbox.db}")
    run_id = store.begin_run(benchmark="syscall.getppid", metric="syscall.getppid.latency", unit="ns",
                             direction="lower", params={}, request={}, sysinfo=None, target=None)
    spill = store.spill_path(run_id)
    assert spill is not None
    spill.parent.mkdir(parents=True, exist_ok=True)
    spill.write_bytes(b"\x00" * 64 + b"\n" + b"\x01" * 80)
    assert store.finish_unfinished(run_id, status="failed", error="the probe died") == 0
    record = store.get_run(run_id)
    assert record.status == "failed" and record.error is not None
    assert record.error.startswith(f"the probe died; the spill file {spill} of run {run_id} is damaged (its "
                                   "header is not JSON")
    assert store.notes == [record.warnings[-1]] and spill.with_name(spill.name + ".damaged").exists()


def test_a_read_only_spill_directory_measures_without_streaming(
    sandbox: Sandbox, private_mounts: list[str]
) -> None:
    assert sandbox.run("run", "syscall.getppid", "--samples", "100").returncode == 0
    spills = _spill_dir(sandbox)
    assert spills.is_dir()
    script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 99; shift; exec "$@"'
    done = subprocess.run([*private_mounts, "sh", "-c", script, "sh", str(spills),
                           *sandbox.argv("run", "syscall.getppid", "--samples", "1000", "--json")],
                          capture_output=True, text=True, env=sandbox.env(), timeout=120)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    assert (run["status"], run["n"]) == ("complete", 1000)
    assert any(w.startswith("the samples were not streamed to disk while measured (cannot write "
                            f"{spills / 'run-2.spill'}: Read-only file system)") for w in run["warnings"])
