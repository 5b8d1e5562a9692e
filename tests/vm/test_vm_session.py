"""The VM target against a real kernel in qemu (one shared boot; see conftest.py)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
from pathlib import Path

import pytest

from kbench.targets.vm import (
    GuestRequestError,
    KernelImage,
    KernelResolveError,
    VmError,
    VmSession,
    build_module,
    resolve_kernel,
)
from kbench.targets.vm.accel import TCG_THREAD_ENV, qemu_release, qemu_version, remembered

pytestmark = pytest.mark.vm


def test_kernel_resolved(vm_kernel: KernelImage) -> None:
    assert vm_kernel.vmlinuz.is_file()
    assert vm_kernel.modules_dir is not None and (vm_kernel.modules_dir / "kernel").is_dir()
    if vm_kernel.source == "debian":
        assert vm_kernel.build_dir is not None
        assert (vm_kernel.build_dir / "scripts" / "basic" / "fixdep").exists()


def test_uname_is_the_resolved_release(vm: VmSession, vm_kernel: KernelImage) -> None:
    r = vm.exec(["uname", "-r"])
    assert (r.rc, r.stdout, r.stderr, r.timed_out) == (0, f"{vm_kernel.release}\n".encode(), b"", False)
    assert vm.guest_release == vm_kernel.release


def test_exit_status_stdout_and_stderr(vm: VmSession) -> None:
    r = vm.exec("echo out; echo err >&2; exit 3")
    assert (r.rc, r.stdout, r.stderr) == (3, b"out\n", b"err\n")
    assert vm.exec(["sh", "-c", "exit 3"]).rc == 3


def test_argv_and_stdin_are_passed_verbatim(vm: VmSession) -> None:
    assert vm.exec(["printf", "%s|", "a b", "", "c'd"]).stdout == b"a b||c'd|"
    payload = bytes(range(256)) * 1000
    assert vm.exec(["cat"], stdin=payload).stdout == payload


def test_missing_command_and_signals(vm: VmSession) -> None:
    r = vm.exec(["/nonexistent-command"])
    assert r.rc == 127 and b"No such file" in r.stderr
    assert vm.exec("kill -TERM $$").rc == -15


def test_guest_side_timeout_kills_the_command(vm: VmSession) -> None:
    t0 = time.monotonic()
    r = vm.exec("sleep 60", timeout=1)
    assert r.timed_out and r.rc == -9
    assert time.monotonic() - t0 < 20
    assert vm.exec("echo alive").stdout == b"alive\n"


def test_8mib_round_trip_is_byte_exact(vm: VmSession) -> None:
    data = random.Random(1).randbytes(8 << 20)
    digest = hashlib.sha256(data).hexdigest()
    vm.write_file("/tmp/blob", data)
    assert vm.exec(["sha256sum", "/tmp/blob"]).stdout.split()[0].decode() == digest
    assert hashlib.sha256(vm.read_file("/tmp/blob")).hexdigest() == digest
    out = vm.exec(["cat", "/tmp/blob"], timeout=120)  # 8 MiB through a pipe and the agent
    assert out.rc == 0 and hashlib.sha256(out.stdout).hexdigest() == digest
    vm.exec(["rm", "/tmp/blob"])


def test_read_file_errors_leave_the_session_usable(vm: VmSession) -> None:
    with pytest.raises(GuestRequestError, match="No such file"):
        vm.read_file("/no/such/file")
    vm.write_file("/tmp/small", b"x\n", mode=0o600)
    assert vm.exec(["stat", "-c", "%a", "/tmp/small"]).stdout == b"600\n"
    assert vm.read_file("/tmp/small") == b"x\n"


def test_probe_runs_in_the_guest(vm: VmSession) -> None:
    r = vm.exec(["kbench-probe", "run", "getppid", "--samples", "1000"], timeout=120)
    assert r.rc == 0, r.stderr.decode(errors="replace")
    header_line, _, raw = r.stdout.partition(b"\n")
    header = json.loads(header_line)
    assert header["format"] == "kbench-probe/1"
    assert header["workload"] == "getppid"
    assert header["n"] == 1000
    assert len(raw) == header["n"] * len(header["columns"]) * 8


def test_exec_as_an_unprivileged_user(vm: VmSession) -> None:
    r = vm.exec(["id", "-u"], uid=65534)
    assert (r.rc, r.stdout) == (0, b"65534\n")
    assert vm.exec(["id", "-g"], uid=65534).stdout == b"65534\n"
    assert vm.exec(["id", "-u"]).stdout == b"0\n"
    denied = vm.exec(["touch", "/root/x"], uid=65534)
    assert denied.rc != 0 and b"denied" in denied.stderr


def test_accelerator_choice_is_recorded(vm: VmSession, vm_cache_dir: Path) -> None:
    assert vm.accel in ("kvm", "tcg")
    assert vm.accel_reason
    i = vm.qemu_argv.index("-accel")
    assert vm.qemu_argv[i + 1] == vm.accel + (",thread=single" if vm.tcg_thread == "single" else "")
    if vm.accel == "tcg":  # one thread for every vCPU exactly on qemu before 8.1 (docs/VM.md)
        release = qemu_release(qemu_version(vm.qemu))
        by_release = "multi" if release is not None and release >= (8, 1) else "single"
        assert vm.tcg_thread == (os.environ.get(TCG_THREAD_ENV) or by_release)
        assert vm.tcg_thread_reason
    kvm_present = Path("/dev/kvm").exists()
    if kvm_present and "unavailable" not in vm.accel_reason:
        memo = remembered(vm_cache_dir, vm.qemu)
        assert memo is not None and memo["kvm_works"] == (vm.accel == "kvm")


def test_console_log_and_dmesg(vm: VmSession, vm_kernel: KernelImage) -> None:
    assert f"Linux version {vm_kernel.release}" in vm.dmesg()
    text = vm.console_log.read_text(errors="replace")
    assert "kbench-agent: ready" in text
    assert vm.console_problems() == []


def test_module_build_is_cached_and_loads(
    vm: VmSession, vm_kernel: KernelImage, vm_cache_dir: Path, tmp_path: Path
) -> None:
    src = tmp_path / "kbhello"
    src.mkdir()
    (src / "kbhello.c").write_text(
        "#include <linux/module.h>\n"
        'static int __init kbhello_init(void) { pr_info("kbhello: loaded\\n"); return 0; }\n'
        'static void __exit kbhello_exit(void) { pr_info("kbhello: unloaded\\n"); }\n'
        'module_init(kbhello_init);\nmodule_exit(kbhello_exit);\nMODULE_LICENSE("GPL");\n'
    )
    (src / "Kbuild").write_text("obj-m += kbhello.o\n")
    kos = build_module(src, vm_kernel, vm_cache_dir)
    built_at = kos[0].stat().st_mtime_ns
    assert build_module(src, vm_kernel, vm_cache_dir) == kos
    assert kos[0].stat().st_mtime_ns == built_at, "an unchanged source must come from the cache"
    assert [k.name for k in kos] == ["kbhello.ko"]
    vm.write_file("/tmp/kbhello.ko", kos[0].read_bytes())
    r = vm.exec("insmod /tmp/kbhello.ko && grep -c kbhello /proc/modules && rmmod kbhello")
    assert r.rc == 0, r.stderr
    assert "kbhello: loaded" in vm.dmesg()
    # an unprivileged user cannot load a module
    denied = vm.exec(["insmod", "/tmp/kbhello.ko"], uid=65534)
    assert denied.rc != 0


def test_unknown_debian_release_is_a_clear_error(vm_cache_dir: Path) -> None:
    with pytest.raises(KernelResolveError, match=r"apt knows no package.*nearby"):
        resolve_kernel("deb:6.1.0-999-amd64", vm_cache_dir)
    with pytest.raises(KernelResolveError, match="no such file"):
        resolve_kernel(str(vm_cache_dir / "no-such-bzImage"), vm_cache_dir)


def test_kernel_panic_is_reported_within_the_timeout(vm: VmSession, vm_kernel: KernelImage, vm_cache_dir: Path) -> None:
    timeout = 60.0
    t0 = time.monotonic()
    with pytest.raises(VmError) as info:
        VmSession(
            vm_kernel,
            cache_dir=vm_cache_dir,
            accel=vm.accel,  # the shared session already found out what works here
            cmdline_extra="rdinit=/nonexistent panic=1",
            boot_timeout=timeout,
        )
    assert time.monotonic() - t0 < timeout
    assert "Kernel panic" in str(info.value)
    assert "Kernel panic" in info.value.console_tail


def test_panic_while_running_a_command_is_reported(vm: VmSession, vm_kernel: KernelImage, vm_cache_dir: Path) -> None:
    with VmSession(vm_kernel, cache_dir=vm_cache_dir, accel=vm.accel, boot_timeout=120) as crashing:
        t0 = time.monotonic()
        with pytest.raises(VmError) as info:
            crashing.exec("echo c > /proc/sysrq-trigger", timeout=30)
        assert time.monotonic() - t0 < 30
    assert "Kernel panic" in str(info.value) and "sysrq" in str(info.value)
