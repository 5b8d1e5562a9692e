"""Why kbench runs TCG's vCPUs in one thread on qemu before 8.1 (kbench.targets.vm.accel.tcg_threading).

The kernel's own kprobe event (tracefs, no kbench.ko) on a syscall that a process calls in a tight
loop, disabled and removed while the calls go on: with a host thread per vCPU, qemu 7.2 crashes the
guest within a few cycles (RIP 0: a vCPU keeps running the int3 that ftrace put on the call site
after the site is a nop again, and the kernel single-steps the ftrace kprobe's NULL instruction
slot; or a soft lockup on that int3 once the kprobe is gone). With the vCPUs in one thread, the
same cycles run clean. If the first test starts failing, qemu no longer has the race (a fixed
build) and the single-threaded mode could be dropped for it.

Soak: two guests of their own. Measured here (qemu 7.2, 2026-11-27): the multi-threaded guest
crashed at cycle 1 or 2 in 5 runs of 5, and kbench.ko's unload loop at its 1st to 6th unload;
at a crash chance as low as 0.2 per cycle, 60 clean cycles would happen with probability
0.8**60 = 1.5e-6.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kbench.targets.vm import VmError
from kbench.targets.vm.accel import MTTCG_FIXED_IN, TCG_THREAD_ENV, qemu_release, qemu_version
from kbench.targets.vm.qemu import find_qemu
from kbench.targets.vm_target import VmTarget
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = [pytest.mark.vm, pytest.mark.soak]

HELPERS = Path(__file__).parent / "helpers"
POKE = "/tmp/trace_poke"
TRACEFS = "/sys/kernel/tracing"
CYCLE = (
    f"echo 'p:kbench_stale __x64_sys_getppid' > {TRACEFS}/kprobe_events && "
    f"echo 1 > {TRACEFS}/events/kprobes/kbench_stale/enable && "
    f"{{ {POKE} getppid 4000000000 > /dev/null & P=$!; sleep 0.5; "
    f"echo 0 > {TRACEFS}/events/kprobes/kbench_stale/enable; echo '-:kbench_stale' >> {TRACEFS}/kprobe_events; "
    "echo removed=$?; kill $P; wait $P; }"
)


def _cycles_until_trouble(tmp_path: Path, cycles: int) -> tuple[int, str]:
    """Boot a TCG guest without kbench.ko and run CYCLE up to ``cycles`` times: (clean cycles, trouble)."""
    target = VmTarget(TEST_KERNEL, console_log=tmp_path / "console.log", accel="tcg", with_module=False)
    session = target.start()
    try:
        binary = tmp_path / "trace_poke"
        subprocess.run(["gcc", "-O2", "-static", "-Wall", "-o", str(binary), str(HELPERS / "trace_poke.c")],
                       check=True)
        session.write_file(POKE, binary.read_bytes(), mode=0o755)
        assert session.exec(f"test -e {TRACEFS}/kprobe_events || mount -t tracefs nodev {TRACEFS}").ok
        for cycle in range(cycles):
            try:
                result = session.exec(CYCLE, timeout=120)
            except VmError as exc:
                return cycle, exc.reason
            assert "removed=0" in result.text, (cycle, result.text, result.stderr)
            if problems := kernel_log_problems(session.dmesg()):
                return cycle, "\n".join(problems)
        return cycles, ""
    finally:
        target.close()


def test_multi_threaded_tcg_of_an_old_qemu_crashes_on_kprobe_removal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    release = qemu_release(qemu_version(find_qemu()))
    if release is None or release >= MTTCG_FIXED_IN:
        pytest.skip(f"qemu {release} has the fix; nothing to show")
    monkeypatch.setenv(TCG_THREAD_ENV, "multi")
    clean, trouble = _cycles_until_trouble(tmp_path, 60)
    assert trouble, "60 clean cycles: this qemu's multi-threaded TCG no longer runs stale code"
    # the NULL single-step, a stale int3 nobody claims, or the endless int3 once the kprobe is gone
    assert re.search(r"NULL pointer dereference|int3|soft lockup", trouble), (clean, trouble)


def test_single_threaded_tcg_removes_kprobes_under_calls_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TCG_THREAD_ENV, "single")
    clean, trouble = _cycles_until_trouble(tmp_path, 20)
    assert (clean, trouble) == (20, "")
