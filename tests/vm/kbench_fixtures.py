"""A VM with kbench.ko loaded, shared by every in-kernel test (one boot per session).

Import the fixtures into a test module (``from tests.vm.kbench_fixtures import …``);
pytest then shares the session-scoped guest across modules. At teardown the guest's
kernel log is checked: any BUG, WARNING, Oops, lockup or stall fails the session.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbench.targets.vm_target import VmTarget

TEST_KERNEL = os.environ.get("KBENCH_TEST_KERNEL", "deb:6.1.0-56-amd64")
BAD_KERNEL_LOG = re.compile(
    r"BUG[: ]|WARNING:|Oops|soft lockup|hard LOCKUP|rcu_sched detected stall|rcu_preempt detected stall|"
    r"self-detected stall|general protection|Call Trace"
)
HELPER_SOURCE = Path(__file__).parent / "helpers" / "sysfs_poke.c"
GUEST_HELPER = "/tmp/sysfs_poke"


def kernel_log_problems(log: str) -> list[str]:
    return [line for line in log.splitlines() if BAD_KERNEL_LOG.search(line)]


@pytest.fixture(scope="session")
def kbench_vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmTarget]:
    console = tmp_path_factory.mktemp("kbench-vm") / "console.log"
    target = VmTarget(TEST_KERNEL, console_log=console)
    target.start()
    assert target.module is not None, target.module_error
    yield target
    session = target.session
    assert session is not None
    problems = kernel_log_problems(session.dmesg()) + kernel_log_problems(session.console_text())
    unloaded = session.exec(["rmmod", "kbench"], timeout=60)
    problems += kernel_log_problems(session.dmesg())
    target.close()
    assert unloaded.rc == 0, f"rmmod kbench failed: {unloaded.stderr!r}"
    assert not problems, "guest kernel log has problems:\n" + "\n".join(problems)


@pytest.fixture(scope="session")
def guest_helper(kbench_vm: VmTarget, tmp_path_factory: pytest.TempPathFactory) -> str:
    """tests/vm/helpers/sysfs_poke.c built statically here and copied into the guest."""
    binary = tmp_path_factory.mktemp("helper") / "sysfs_poke"
    subprocess.run(
        ["gcc", "-O2", "-static", "-Wall", "-o", str(binary), str(HELPER_SOURCE)], check=True
    )
    session = kbench_vm.session
    assert session is not None
    session.write_file(GUEST_HELPER, binary.read_bytes(), mode=0o755)
    return GUEST_HELPER
