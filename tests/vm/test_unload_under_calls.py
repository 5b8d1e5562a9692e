"""Unloading kbench.ko while a process calls a probed function in a tight loop (issue 27, item 6).

This used to crash Debian's 6.1 guest under TCG on the 1st to 6th unload (RIP 0 on the probed
syscall's path). The cause was qemu, not kbench.ko: before qemu 8.1, multi-threaded TCG can keep
running kernel text that another vCPU has just rewritten. Removing the probe turns the function's
ftrace call site back into a nop through a temporary int3; a vCPU that keeps running the stale int3
after the site is a nop again enters the kernel's int3 handler, which takes it for the ftrace-based
kprobe's own breakpoint and single-steps the probe's instruction slot, NULL for such a probe.
kbench runs TCG's vCPUs in one thread on such a qemu (``kbench.targets.vm.accel.tcg_threading``);
``test_tcg_stale_code.py`` (soak) shows the crash with the kernel's own kprobe events and no
kbench.ko when the vCPUs get a thread each.

The guest is this test's own, so that a crash does not take the shared session of the other vm
tests with it. One boot, 20 unloads and 10 removals through `functions`: about 45 s here under TCG.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbench.targets.key_values import parse_key_values
from kbench.targets.vm_target import GUEST_MODULE, VmTarget
from kbench.trace.kernel import KernelTraceLog
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = pytest.mark.vm

HELPERS = Path(__file__).parent / "helpers"
POKE = "/tmp/trace_poke"
PROBED = "__x64_sys_getppid"
UNLOADS = 20
"""Every other one with the log on (the return handler writes entries); the others with the log
finalized first, so that the probe's entry handler still runs on every call but logs nothing."""


@pytest.fixture(scope="module")
def own_vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmTarget]:
    workdir = tmp_path_factory.mktemp("unload-vm")
    target = VmTarget(TEST_KERNEL, console_log=workdir / "console.log")
    target.start()
    try:
        assert target.module is not None and target.session is not None, target.module_error
        binary = workdir / "trace_poke"
        subprocess.run(["gcc", "-O2", "-static", "-Wall", "-o", str(binary), str(HELPERS / "trace_poke.c")],
                       check=True)
        target.session.write_file(POKE, binary.read_bytes(), mode=0o755)
        yield target
    finally:
        target.close()


def test_rmmod_kbench_while_the_probed_function_is_called_in_a_tight_loop(own_vm: VmTarget) -> None:
    session, module = own_vm.session, own_vm.module
    assert session is not None and module is not None
    log = KernelTraceLog(module.io)
    status = "/sys/kernel/kbench/trace/status"
    for unload in range(UNLOADS):
        log_on = unload % 2 == 0
        log.probe(PROBED)
        log.reset()
        # with the log off, its entries (read before rmmod) show that the probe fired during the calls
        finalize = "" if log_on else f"echo finalize > /sys/kernel/kbench/trace/control; cat {status}; "
        result = session.exec(
            f"{POKE} getppid 4000000000 > /dev/null & P=$!; sleep 0.5; {finalize}"
            f"rmmod kbench; echo rmmod=$?; kill $P; wait $P; insmod {GUEST_MODULE}; echo insmod=$?",
            timeout=120)
        facts = parse_key_values(result.text.replace("\n", " "))
        where = (unload, log_on, result.text, result.stderr)
        assert (facts.get("rmmod"), facts.get("insmod")) == ("0", "0"), where
        if not log_on:
            assert int(facts["entries"]) > 0, where
        assert kernel_log_problems(session.dmesg()) == [], where
        assert log.functions() == [], "a fresh kbench.ko probes nothing"


def test_probe_removed_through_functions_while_the_function_is_called(own_vm: VmTarget) -> None:
    """The same text patching through the documented way to remove a probe: `-NAME` and `clear`."""
    session, module = own_vm.session, own_vm.module
    assert session is not None and module is not None
    log = KernelTraceLog(module.io)
    functions = "/sys/kernel/kbench/trace/functions"
    for removal in range(10):
        command = f"-{PROBED}" if removal % 2 == 0 else "clear"
        log.probe(PROBED)
        result = session.exec(
            f"{POKE} getppid 4000000000 > /dev/null & P=$!; sleep 0.5; "
            f"echo {command} > {functions}; echo removed=$?; kill $P; wait $P", timeout=120)
        where = (removal, command, result.text, result.stderr)
        assert "removed=0" in result.text, where
        assert kernel_log_problems(session.dmesg()) == [], where
        assert log.functions() == [], where
