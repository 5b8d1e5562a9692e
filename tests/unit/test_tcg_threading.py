"""Whether TCG gets a host thread per vCPU: only on a qemu whose multi-threaded TCG has the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.targets.vm.accel import TCG_THREAD_ENV, qemu_release, tcg_threading
from kbench.targets.vm.errors import VmTargetError
from kbench.targets.vm.qemu import QemuConfig


def fake_qemu(tmp_path: Path, version_line: str) -> str:
    """An executable that answers --version like qemu-system-x86_64."""
    path = tmp_path / "qemu-system-x86_64"
    path.write_text(f"#!/bin/sh\necho '{version_line}'\necho 'Copyright (c) 2003-2022 Fabrice Bellard'\n")
    path.chmod(0o755)
    return str(path)


@pytest.mark.parametrize(
    ("line", "release"),
    [
        ("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)", (7, 2)),
        ("QEMU emulator version 8.1.0", (8, 1)),
        ("QEMU emulator version 10.0.2 (qemu-10.0.2-1.fc42)", (10, 0)),
        ("unknown", None),
    ],
)
def test_release_from_the_version_line(line: str, release: tuple[int, int] | None) -> None:
    assert qemu_release(line) == release


@pytest.mark.parametrize(
    ("line", "thread"),
    [
        ("QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)", "single"),
        ("QEMU emulator version 8.0.5", "single"),
        ("QEMU emulator version 8.1.0", "multi"),
        ("QEMU emulator version 9.2.3", "multi"),
        ("not a qemu at all", "single"),
    ],
)
def test_threads_follow_the_qemu_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, thread: str
) -> None:
    monkeypatch.delenv(TCG_THREAD_ENV, raising=False)
    choice = tcg_threading(fake_qemu(tmp_path, line))
    assert choice.thread == thread
    assert choice.reason


def test_environment_overrides_and_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = fake_qemu(tmp_path, "QEMU emulator version 7.2.22")
    monkeypatch.setenv(TCG_THREAD_ENV, "multi")
    assert tcg_threading(old).thread == "multi"
    monkeypatch.setenv(TCG_THREAD_ENV, "single")
    assert tcg_threading(fake_qemu(tmp_path, "QEMU emulator version 9.2.3")).thread == "single"
    monkeypatch.setenv(TCG_THREAD_ENV, "two")
    with pytest.raises(VmTargetError, match=f"{TCG_THREAD_ENV}='two': expected single or multi"):
        tcg_threading(old)


def test_accel_option_on_the_qemu_command_line(tmp_path: Path) -> None:
    def accel_option(accel: str, thread: str) -> str:
        argv = QemuConfig(qemu="qemu", kernel=tmp_path / "k", initrd=tmp_path / "i", console_log=tmp_path / "c",
                          agent_socket=tmp_path / "s", accel=accel, tcg_thread=thread).argv()
        return argv[argv.index("-accel") + 1]

    assert accel_option("tcg", "single") == "tcg,thread=single"
    assert accel_option("tcg", "multi") == "tcg"
    assert accel_option("kvm", "single") == "kvm"
