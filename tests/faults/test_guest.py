"""Faults of a run in a kernel booted in qemu: kbench killed or stopped, qemu killed, a
guest oops, a module that does not compile.

Each test boots its own guest (a kbench process of its own; ~5 s under TCG); they are
kept few and short. No qemu may survive kbench, a signal keeps the samples the module
took, and every failure is one error with exit 3, never a traceback or a hang. Whatever
ends the run (kill -9 of kbench, a dead qemu, an oops, the run's bound, a late or a
repeated Ctrl-C), the samples that reached the run's spill file on the host are kept:
the run is stored with at least as many as the spill held before the blow.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
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
    command_name,
    descendants,
    kill_hard,
    run_rows,
    wait_for,
)
from tests.vm.guest_log import TEST_KERNEL

pytestmark = pytest.mark.vm

QEMU = "qemu-system-x86"
#: the issue's repro: long enough (minutes under TCG) to be stopped half-way
LONG_SAMPLES = 1_500_000
LONG_KFUNC_RUN = ("run", "kfunc.empty", "--kernel", TEST_KERNEL, "--samples", str(LONG_SAMPLES), "--batch", "600",
                  "--json")
"""About 14 s of kbench.ko's run under TCG here, 0.9 GB of calls (its limit is 1 G). Few
samples, each of many calls: the guest's agent streams some 2.4 MB/s of samples to the
host, so these (0.9 MB/s) reach the spill as they are taken, and a signal sent once the
spill has some lands while the module measures. (10 M samples of 64 calls were taken
faster than they streamed: the module had finished when the spill held a third, and a
SIGTERM then found the run done.)"""
GUEST_RUN_BOUND_S = 600
"""A test's kbench must be done by then; a hang (the old 3600 s agent wait) fails it."""
OOPS_BOUND_S = 60
"""Issue 17: a guest oops ends the run within a minute of measuring (a bound, not a speed goal)."""


def _guest_qemus(kbench: int, db: Path) -> list[int]:
    """Every qemu booting a guest under ``kbench`` until its run row exists (once
    measuring), in the order they were seen.

    There may be more than one: on a host whose KVM verdict is not cached yet (a fresh
    machine, as CI is) kbench first tries a KVM boot, which fails and exits here, then
    boots again under TCG. The run row is written once the guest is up.
    """
    seen: list[int] = []

    def measuring() -> bool:
        _note_guest_qemus(kbench, seen)
        return any(status == "running" for _, status, _, _ in _rows_if_any(db))

    wait_for(measuring, "a run row with status running", GUEST_RUN_BOUND_S)
    measuring()  # the guest may have started between the last look and the row
    assert seen, "no qemu booted a guest under kbench"
    return seen


def _note_guest_qemus(kbench: int, seen: list[int]) -> None:
    """Add to ``seen`` the qemus now booting a guest under ``kbench`` that it lacks."""
    seen.extend(pid for pid in descendants(kbench)
                if pid not in seen and command_name(pid) == QEMU and b"-kernel" in _cmdline(pid))


def _rows_if_any(db: Path) -> list[tuple[int, str, int, str | None]]:
    try:
        return run_rows(db) if db.exists() else []
    except sqlite3.Error:
        return []


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


NO_STREAM_ATTEMPTS = 3
"""A guest kfunc run now and then streams nothing to the host while it measures: the spill
keeps its header alone until the run ends whole (here about 1 run in 40 of this file's in a
row under load, once in CI; not understood yet, docs/VM.md "Known problems"). Such a run
cannot be stopped half-way, which these tests are about: the helper starts another. With
3 attempts a test fails so only if 3 runs in a row do not stream, about 1 in 60 000 at
1 in 40, and every helper call of a CI run together about 1 in 9 000."""


def _measuring_in_the_guest(sandbox: Sandbox, args: tuple[str, ...] = LONG_KFUNC_RUN) -> tuple[
    subprocess.Popen[str], int, list[int]
]:
    """Start kbench; return once the module's samples reach the run's spill (it exists only
    while the run measures). A kbench that ends otherwise than with its run complete and
    never streamed fails the test at once, with its output."""
    unstreamed = []
    for _ in range(NO_STREAM_ATTEMPTS):
        measuring = _start_measuring(sandbox, args)
        if not isinstance(measuring, str):
            return measuring
        unstreamed.append(measuring)
        _forget_the_run(sandbox)
    raise AssertionError(f"{NO_STREAM_ATTEMPTS} runs in a row ended before their samples reached the spill: "
                         + "\n".join(unstreamed))


def _start_measuring(sandbox: Sandbox, args: tuple[str, ...]) -> tuple[subprocess.Popen[str], int, list[int]] | str:
    """kbench measuring as ``_measuring_in_the_guest`` says, or what a run that completed
    without streaming said."""
    proc = sandbox.start(*args)
    qemus: list[int] = []
    spill_files: set[str] = set()
    ended: list[str] = []

    def measuring() -> bool:
        _note_guest_qemus(proc.pid, qemus)
        spills = _spill_files(sandbox)
        if _rows(spills) > 0:
            return True
        spill_files.update(str(path) for path in spills)
        if proc.poll() is not None:
            stdout, stderr = proc.communicate()
            rows = run_rows(sandbox.db) if sandbox.db.exists() else []
            said = (f"kbench ended (exit {proc.returncode}) before its samples reached the spill (spill files seen: "
                    f"{sorted(spill_files) or 'none'}; warnings: {_warnings(stdout)}): {stderr[-2000:]} "
                    f"{stdout[-500:]} {rows}")
            if proc.returncode != 0 or [row[1:3] for row in rows] != [("complete", LONG_SAMPLES)]:
                raise AssertionError(said)
            ended.append(said)
            return True
        return False

    wait_for(measuring, "samples in the run's spill", GUEST_RUN_BOUND_S)
    if ended:
        return ended[0]
    assert qemus, "no qemu booted a guest under kbench"
    living = [pid for pid in qemus if alive(pid)]
    assert len(living) == 1, f"one guest measuring, qemus seen {qemus}, alive {living}"
    return proc, living[0], descendants(proc.pid)


def _forget_the_run(sandbox: Sandbox) -> None:
    """A clean store again (the tests look at its only run), once kbench has left nothing behind."""
    assert sandbox.leftovers() == []
    for path in sandbox.db.parent.glob(sandbox.db.name + "*"):
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def _spill_files(sandbox: Sandbox) -> list[Path]:
    return list((sandbox.db.parent / (sandbox.db.name + "-spill")).glob("run-*.spill"))


def _spilled(sandbox: Sandbox) -> int:
    """The samples in the spill of the sandbox's only run (0 before there is one)."""
    return _rows(_spill_files(sandbox))


def _rows(spills: list[Path]) -> int:
    head = spill_head(spills[0]) if spills else None
    return 0 if head is None else head.rows


def _warnings(stdout: str) -> object:
    try:
        return json.loads(stdout).get("warnings")
    except (ValueError, AttributeError):
        return "no JSON on stdout"


def _stored(sandbox: Sandbox) -> tuple[str, int, str | None]:
    """(status, samples, error) of the only run once a writing kbench has opened the store."""
    Store.open(f"sqlite:///{sandbox.db}").engine.dispose()
    [(_, status, n, error)] = run_rows(sandbox.db)
    return status, n, error


def test_kill_9_during_a_vm_run_leaves_no_qemu_and_keeps_the_spilled_samples(sandbox: Sandbox) -> None:
    proc, qemu, below = _measuring_in_the_guest(sandbox)
    before = _spilled(sandbox)
    kill_hard(proc)
    assert_all_gone([qemu, *below], "qemu and kbench's other children after kill -9")
    assert sandbox.leftovers() == []
    assert [status for _, status, _, _ in run_rows(sandbox.db)] == ["running"]
    shown = json.loads(sandbox.run("results", "--json").stdout)
    assert [r["status"] for r in shown] == ["abandoned"] and shown[0]["n_samples"] >= before > 0
    status, n, _ = _stored(sandbox)
    assert status == "abandoned" and n == shown[0]["n_samples"]


def test_sigterm_during_a_kfunc_run_in_the_guest_keeps_the_module_samples(sandbox: Sandbox) -> None:
    proc, qemu, below = _measuring_in_the_guest(sandbox)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=GUEST_RUN_BOUND_S)
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr and "Aborted" not in stderr
    run = json.loads(stdout)
    assert run["status"] == "interrupted" and 0 < run["n"] < LONG_SAMPLES
    assert_all_gone([qemu, *below], "qemu after SIGTERM")
    assert sandbox.leftovers() == []
    [(run_id, status, n, _)] = run_rows(sandbox.db)
    assert (run_id, status, n) == (run["run_id"], "interrupted", run["n"])


def test_ctrl_c_during_a_kfunc_run_in_the_guest_keeps_the_module_samples(sandbox: Sandbox) -> None:
    proc, qemu, _ = _measuring_in_the_guest(sandbox)
    proc.send_signal(signal.SIGINT)  # to kbench alone, as `kill -INT` does; a terminal's would too
    stdout, stderr = proc.communicate(timeout=GUEST_RUN_BOUND_S)
    assert proc.returncode == 130, stderr
    assert "Aborted" not in stderr and "Traceback" not in stderr
    run = json.loads(stdout)
    assert run["status"] == "interrupted" and run["n"] > 0
    assert not alive(qemu)
    assert run_rows(sandbox.db)[0][1:3] == ("interrupted", run["n"])


LATE = 0.9
"""Issue 27's late Ctrl-C: once the spill holds this share of the samples (the end of the
kernel's run, or kbench fetching them)."""


@pytest.mark.parametrize("presses", [1, 2], ids=["ctrl-c", "ctrl-c-twice"])
def test_a_late_ctrl_c_keeps_the_samples_and_a_second_is_never_ignored(sandbox: Sandbox, presses: int) -> None:
    proc, qemu, below = _measuring_in_the_guest(sandbox)
    wait_for(lambda: _spilled(sandbox) >= LATE * LONG_SAMPLES or proc.poll() is not None,
             "the end of the run", GUEST_RUN_BOUND_S)
    before = _spilled(sandbox)
    for _ in range(presses):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    # A hang (the old unbounded waits on the guest) fails here; the bound is not a speed goal.
    stdout, stderr = proc.communicate(timeout=OOPS_BOUND_S)
    assert "Traceback" not in stderr and "Aborted" not in stderr
    if proc.returncode == 0:  # the run had ended before the first Ctrl-C: nothing to stop
        assert json.loads(stdout)["n"] == LONG_SAMPLES
        return
    # 130; or, when the second press lands while kbench is already exiting on the first, death by
    # SIGINT, which a shell reports as 130 all the same (seen by hand: a first press 0 ms after the
    # run was stored whole, the second 50 ms later)
    assert proc.returncode in ((130,) if presses == 1 else (130, -signal.SIGINT)), stderr
    assert_all_gone([qemu, *below], "qemu after Ctrl-C")
    status, n, _ = _stored(sandbox)
    # A Ctrl-C that lands after the run was stored whole (while the guest shuts down) stops
    # kbench, not the run: it stays complete with every sample (seen in CI, with two presses).
    assert (status, n) == ("complete", LONG_SAMPLES) or (status == "interrupted" and n >= before > 0), (status, n)
    assert sandbox.leftovers() == []


FETCHED_SAMPLES = 3_000_000
"""Issue 34's window: 10 M samples of 64 calls stream to the spill slower than the module takes
them (here 2.5 M of 3 M reached it by the run's end, 2.6 M of 10 M), so the rest exist only in
kbench's memory once fetched, for the seconds it takes to summarise and store them."""


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["sigint", "sigterm"])
def test_a_signal_while_the_fetched_samples_are_summarised_keeps_every_one(
    sandbox: Sandbox, sig: signal.Signals, code: int,
) -> None:
    """`kbench run kfunc.empty --samples 10000000 --batch 64` stopped after the module's run, while
    kbench fetched the samples or summarised them: it exited 130/143, left its row `running`, and the
    next kbench stored the spill's 1.9-3.0 M samples (4 of 13 tries); later, a signal while the fetched
    samples were checked (their median, in KbenchModule.run) did the same (SIGTERM: 7 of 11 tries under
    load). The signal is sent once the guest is idle again (its qemu, busy while the module measures
    and while the samples are sent, quiet) and kbench works on the samples (its own CPU busy);
    wherever it lands, every sample is stored."""
    args = ("run", "kfunc.empty", "--kernel", TEST_KERNEL, "--samples", str(FETCHED_SAMPLES), "--batch", "64", "--json")
    proc = sandbox.start(*args)
    qemus: list[int] = []

    def measuring() -> bool:
        _note_guest_qemus(proc.pid, qemus)
        return _spilled(sandbox) > 0 or proc.poll() is not None

    wait_for(measuring, "samples in the run's spill", GUEST_RUN_BOUND_S)
    qemu = next((pid for pid in qemus if alive(pid)), -1)
    last = [time.monotonic(), _cpu_seconds(qemu), _cpu_seconds(proc.pid), 0]

    def working_on_samples() -> bool:
        if proc.poll() is not None:
            return True
        time.sleep(0.1)
        now, guest, kbench = time.monotonic(), _cpu_seconds(qemu), _cpu_seconds(proc.pid)
        span = now - last[0]
        quiet_guest, busy_kbench = (guest - last[1]) / span < 0.3, (kbench - last[2]) / span >= 0.3
        last[:] = [now, guest, kbench, last[3] + 1 if quiet_guest and busy_kbench else 0]
        return last[3] >= 2

    wait_for(working_on_samples, "kbench working on the fetched samples", GUEST_RUN_BOUND_S)
    below = descendants(proc.pid)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=GUEST_RUN_BOUND_S)
    assert "Traceback" not in stderr, stderr
    [(_, status, n, error)] = run_rows(sandbox.db)  # as kbench left it, before any other kbench opens the store
    assert n == FETCHED_SAMPLES and status in ("interrupted", "complete"), (status, n, error, proc.returncode,
                                                                             stderr[-2000:])
    assert proc.returncode in (0, code), stderr  # 0: it had ended before the signal
    if proc.returncode == code and status == "interrupted":
        assert json.loads(stdout)["n"] == FETCHED_SAMPLES
    assert_all_gone(below, "qemu and kbench's other children after the signal")
    assert sandbox.leftovers() == []


def test_ctrl_c_twice_after_the_run_was_stored_whole_keeps_it_complete(sandbox: Sandbox) -> None:
    """The corner the late Ctrl-C test reaches by chance: both presses land while kbench tears
    the guest down after storing the run complete."""
    samples = 200_000
    proc = sandbox.start("run", "kfunc.empty", "--kernel", TEST_KERNEL, "--samples", str(samples), "--batch", "600",
                         "--json")
    wait_for(lambda: proc.poll() is not None or [row[1] for row in _rows_if_any(sandbox.db)] == ["complete"],
             "the run stored complete", GUEST_RUN_BOUND_S)
    below = descendants(proc.pid)
    for _ in range(2):
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)
    _, stderr = proc.communicate(timeout=OOPS_BOUND_S)
    assert "Traceback" not in stderr and "Aborted" not in stderr
    assert proc.returncode in (0, 130, -signal.SIGINT), stderr  # 0: it had ended before the first press
    assert_all_gone(below, "qemu and kbench's other children after Ctrl-C")
    assert [row[1:3] for row in run_rows(sandbox.db)] == [("complete", samples)]
    assert sandbox.leftovers() == []


def test_qemu_killed_under_a_run_is_a_measurement_failure_that_keeps_the_spilled_samples(sandbox: Sandbox) -> None:
    proc, qemu, _ = _measuring_in_the_guest(sandbox)
    before = _spilled(sandbox)
    os.kill(qemu, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=GUEST_RUN_BOUND_S)
    assert proc.returncode == 3, stderr
    assert "Traceback" not in stderr
    assert stderr.startswith("kbench: error: ") and "qemu exited" in stderr
    [(_, status, n, error)] = run_rows(sandbox.db)
    assert status == "failed" and n >= before > 0
    assert error is not None and "qemu exited" in error and f"the {n} samples it took before were recovered" in error
    assert sandbox.leftovers() == []


OOPS_CALL = """\
static void {name}_call(struct kbench_ctx *ctx, u32 i)
{{
	static u64 calls;

	/* Call 500 reads address 0x10: a NULL-pointer oops in the measuring kthread. */
	if (++calls == 500)
		ctx->priv = (void *)(unsigned long)*(volatile u64 *)0x10;
}}
"""


def _module(sandbox: Sandbox, name: str) -> Path:
    done = sandbox.run("kmod", "new", name, "--dir", str(sandbox.root))
    assert done.returncode == 0, done.stderr
    return sandbox.root / f"{name}.c"


def _replace_call(source: Path, name: str, body: str) -> None:
    text = source.read_text()
    start = text.index(f"static void {name}_call(")
    end = text.index("\n}\n", start) + 3
    source.write_text(text[:start] + body + text[end:])


def test_a_guest_oops_ends_the_run_at_once_with_the_oops_in_the_message(sandbox: Sandbox) -> None:
    source = _module(sandbox, "oopsy")
    _replace_call(source, "oopsy", OOPS_CALL.format(name="oopsy"))
    proc = sandbox.start("run", "kfunc.oopsy", "--kernel", TEST_KERNEL, "--module", str(source),
                         "--samples", "100000", "--batch", "1", "--json")
    qemus = _guest_qemus(proc.pid, sandbox.db)
    # Once measuring, the oops must end the run within a minute (it used to hang for an hour).
    stdout, stderr = proc.communicate(timeout=OOPS_BOUND_S)
    assert proc.returncode == 3, (stdout, stderr)
    assert "Traceback" not in stderr
    assert "the guest kernel reported trouble" in stderr
    assert "BUG: kernel NULL pointer dereference, address: 0000000000000010" in stderr
    assert "Oops:" in stderr and "oopsy_call" in stderr
    assert not any(alive(pid) for pid in qemus)
    [(_, status, n, error)] = run_rows(sandbox.db)
    # With a given batch nothing runs before the run: its warm-up makes calls 1-100, and
    # calls 101-499 are the samples the module recorded (streamed to the host as taken)
    # before call 500 oopsed.
    assert status == "failed" and n == 499 - 100
    assert error is not None and "NULL pointer dereference" in error
    assert sandbox.leftovers() == []


def test_a_module_that_does_not_compile_prints_the_compiler_output_as_it_is(sandbox: Sandbox) -> None:
    source = _module(sandbox, "badmod")
    _replace_call(source, "badmod", "static void badmod_call(struct kbench_ctx *ctx, u32 i)\n{\n"
                                    "\tkbench_no_such_function(ctx, i);\n}\n")
    done = sandbox.run("run", "kfunc.badmod", "--kernel", TEST_KERNEL, "--module", str(source),
                       "--samples", "1000", timeout=GUEST_RUN_BOUND_S)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and "MarkupError" not in done.stderr
    assert done.stderr.startswith("kbench: error: ")
    assert "kbench_no_such_function" in done.stderr
    # make's own "[path/Makefile.build:NNN: target] Error 1" lines, brackets and all
    assert "Makefile.build:" in done.stderr and "] Error" in done.stderr
    # stored as a failed run with the compiler's output, as docs/exit-codes.md says of exit 3
    [(_, status, n, error)] = run_rows(sandbox.db)
    assert status == "failed" and n == 0 and error is not None and "kbench_no_such_function" in error
    shown = json.loads(sandbox.run("results", "--json").stdout)
    assert [(r["benchmark"], r["status"]) for r in shown] == [("kfunc.badmod", "failed")]


SLOW_AFTER_CALIBRATION = """\
static void {name}_call(struct kbench_ctx *ctx, u32 i)
{{
	static unsigned long fast_until;
	static u64 calls;

	/* Fast while kbench calibrates (210 calls) and for 1 s of the run, then 100 ms a call. */
	if (++calls == 211)
		fast_until = jiffies + HZ;
	if (calls > 211 && time_after(jiffies, fast_until))
		msleep(100);
}}
"""


def test_a_run_far_slower_than_its_calibration_is_stopped_at_its_bound(sandbox: Sandbox) -> None:
    source = _module(sandbox, "slowpoke")
    text = source.read_text().replace("#include <linux/slab.h>", "#include <linux/delay.h>\n#include <linux/slab.h>")
    source.write_text(text)
    _replace_call(source, "slowpoke", SLOW_AFTER_CALIBRATION.format(name="slowpoke"))
    # Auto batch: the calibration times the fast calls, and the run's bound comes from it
    # (3 M samples: about 6 s here at full speed, so a bound of about 2 minutes; 10 M took
    # 4.5 minutes of CI to reach its bound).
    proc = sandbox.start("run", "kfunc.slowpoke", "--kernel", TEST_KERNEL, "--module", str(source),
                         "--samples", "3000000", "--json")
    qemus = _guest_qemus(proc.pid, sandbox.db)
    stdout, stderr = proc.communicate(timeout=GUEST_RUN_BOUND_S)
    assert proc.returncode == 3, (stdout, stderr)
    assert "Traceback" not in stderr and "did not finish within its bound of" in stderr
    assert not any(alive(pid) for pid in qemus)
    [(_, status, n, error)] = run_rows(sandbox.db)
    # The samples of the fast seconds reached the spill before the bound stopped the run.
    assert status == "failed" and n > 0 and error is not None and "bound" in error


def test_a_damaged_kernel_image_is_refused_before_booting(sandbox: Sandbox) -> None:
    from kbench.targets.vm import default_cache_dir, resolve_kernel

    image = bytearray(resolve_kernel(TEST_KERNEL, default_cache_dir()).vmlinuz.read_bytes())
    image[-300_000:-100_000] = bytes(200_000)  # inside the compressed kernel
    damaged = sandbox.root / "bzImage"
    damaged.write_bytes(image)
    done = sandbox.run("run", "syscall.getppid", "--kernel", str(damaged), "--samples", "10",
                       timeout=GUEST_RUN_BOUND_S)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    # It used to boot and say only "qemu exited with status 0" (the guest faults before its console is up).
    assert done.stderr.strip() == (f"kbench: error: kernel image {damaged} is damaged: its xz payload does not "
                                   "decompress; not booted")
    assert sandbox.leftovers() == []
