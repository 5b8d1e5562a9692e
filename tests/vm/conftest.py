"""One shared VM for the vm tests: resolve the test kernel, build the initramfs, boot once.

The kernel is ``deb:6.1.0-56-amd64`` unless ``KBENCH_TEST_KERNEL`` names another spec.
Downloads and builds are cached in kbench's cache directory (``KBENCH_CACHE_DIR``,
default ``~/.cache/kbench``), so only the first run pays for them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbench.targets.vm import KernelImage, VmSession, default_cache_dir, resolve_kernel

TEST_KERNEL = os.environ.get("KBENCH_TEST_KERNEL", "deb:6.1.0-56-amd64")
BOOT_TIMEOUT_S = float(os.environ.get("KBENCH_TEST_BOOT_TIMEOUT", "120"))


@pytest.fixture(scope="session")
def vm_cache_dir() -> Path:
    path = default_cache_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def vm_kernel(vm_cache_dir: Path) -> KernelImage:
    return resolve_kernel(TEST_KERNEL, vm_cache_dir)


@pytest.fixture(scope="session")
def vm(vm_kernel: KernelImage, vm_cache_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmSession]:
    """The guest shared by every vm test (booted once per test session)."""
    console = tmp_path_factory.mktemp("vm") / "console.log"
    with VmSession(
        vm_kernel,
        cache_dir=vm_cache_dir,
        console_log=console,
        boot_timeout=BOOT_TIMEOUT_S,
        memory_mb=1024,
        cpus=2,
    ) as session:
        yield session
