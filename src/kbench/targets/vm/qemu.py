"""The qemu command line for a kbench guest."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from .errors import VmTargetError

AGENT_PORT = "kbench.0"
SCRATCH_SERIAL = "kbench-scratch"
BASE_CMDLINE = "console=ttyS0 panic=-1"


def find_qemu() -> str:
    qemu = shutil.which("qemu-system-x86_64")
    if qemu is None:
        raise VmTargetError("qemu-system-x86_64 not found: install qemu-system-x86")
    return qemu


def _opt(path: Path | str) -> str:
    """A path as a qemu option value (commas are doubled)."""
    return str(path).replace(",", ",,")


@dataclass(frozen=True)
class QemuConfig:
    qemu: str
    kernel: Path
    initrd: Path
    console_log: Path
    agent_socket: Path
    accel: str = "tcg"
    tcg_thread: str = "multi"  # under TCG: "single" (vCPUs take turns in one thread) or "multi"
    memory_mb: int = 1024
    cpus: int = 2
    cmdline_extra: str = ""
    cpu: str | None = None  # default: "host" under KVM, "max" under TCG
    scratch_disk: Path | None = None  # a raw host file, the guest's virtio-blk disk (serial SCRATCH_SERIAL)
    plugin: str | None = None  # under TCG: a TCG plugin, ``-plugin``'s value (file=LIB,KEY=VALUE...)

    @property
    def cmdline(self) -> str:
        return f"{BASE_CMDLINE} {self.cmdline_extra}".strip()

    def argv(self) -> list[str]:
        disk = [] if self.scratch_disk is None else [
            "-drive", f"file={_opt(self.scratch_disk)},if=none,id=scratch0,format=raw",
            "-device", f"virtio-blk-pci,drive=scratch0,serial={SCRATCH_SERIAL}",
        ]
        accel = f"{self.accel},thread=single" if self.accel == "tcg" and self.tcg_thread == "single" else self.accel
        plugin = ["-plugin", self.plugin] if self.plugin is not None and self.accel == "tcg" else []
        return [
            self.qemu,
            "-accel",
            accel,
            "-cpu",
            self.cpu or ("host" if self.accel == "kvm" else "max"),
            "-m",
            str(self.memory_mb),
            "-smp",
            str(self.cpus),
            "-nodefaults",
            "-no-user-config",
            "-no-reboot",
            "-display",
            "none",
            "-kernel",
            str(self.kernel),
            "-initrd",
            str(self.initrd),
            "-append",
            self.cmdline,
            "-chardev",
            f"file,id=con0,path={_opt(self.console_log)}",
            "-serial",
            "chardev:con0",
            "-device",
            "virtio-serial-pci,id=vser0",
            "-chardev",
            f"socket,id=agent0,path={_opt(self.agent_socket)},server=on,wait=off",
            "-device",
            f"virtserialport,bus=vser0.0,chardev=agent0,name={AGENT_PORT}",
            *disk,
            *plugin,
        ]
