"""One shared VM for the vm tests: resolve the test kernel, build the initramfs, boot once.

The kernel is ``deb:6.1.0-56-amd64`` unless ``KBENCH_TEST_KERNEL`` names another spec.
Downloads and builds are cached in kbench's cache directory (``KBENCH_CACHE_DIR``,
default ``~/.cache/kbench``), so only the first run pays for them.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kbench.targets.vm import KernelImage, VmSession, default_cache_dir, resolve_kernel
from kbench.targets.vm_target import VmTarget
from tests.vm.guest_log import GUEST_HELPER, HELPER_SOURCE, TEST_KERNEL, kernel_log_problems

BOOT_TIMEOUT_S = float(os.environ.get("KBENCH_TEST_BOOT_TIMEOUT", "120"))
GUEST_TOOLS = ("perf",)


@pytest.fixture(scope="session")
def vm_cache_dir() -> Path:
    path = default_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def vm_kernel(vm_cache_dir: Path) -> KernelImage:
    return resolve_kernel(TEST_KERNEL, vm_cache_dir)


@pytest.fixture(scope="session")
def vm(kbench_vm: VmTarget) -> VmSession:
    """The guest shared by every vm test: booted once per test session, kbench.ko loaded."""
    assert kbench_vm.session is not None
    return kbench_vm.session


@contextmanager
def booted_kbench_vm(console_dir: Path, tools: tuple[str, ...] = ()) -> Iterator[VmTarget]:
    """A VM with kbench.ko loaded (and ``tools``). At its end the guest's kernel log is checked:
    any BUG, WARNING, Oops, lockup or stall fails, and kbench.ko must unload."""
    target = VmTarget(TEST_KERNEL, console_log=console_dir / "console.log", suite_tools=tools)
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
def kbench_vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmTarget]:
    """One VM with kbench.ko loaded, and perf (for the profiles of in-kernel benchmarks: carried
    from the start, so that no test boots it again with perf; about 2 s more to boot,
    docs/PERFORMANCE.md), shared by the vm tests."""
    with booted_kbench_vm(tmp_path_factory.mktemp("kbench-vm"), GUEST_TOOLS) as target:
        yield target


@pytest.fixture(scope="session")
def guest_helper(kbench_vm: VmTarget, tmp_path_factory: pytest.TempPathFactory) -> str:
    """tests/vm/helpers/sysfs_poke.c built statically here and copied into the guest."""
    binary = tmp_path_factory.mktemp("helper") / "sysfs_poke"
    subprocess.run(["gcc", "-O2", "-static", "-Wall", "-o", str(binary), str(HELPER_SOURCE)], check=True)
    session = kbench_vm.session
    assert session is not None
    session.write_file(GUEST_HELPER, binary.read_bytes(), mode=0o755)
    return GUEST_HELPER
