"""Where ``kbench trace`` runs: a kernel booted in qemu, or this machine's kernel."""

from __future__ import annotations

import platform
import signal
import subprocess
from pathlib import Path
from typing import Any

from kbench import children
from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.kinds.registry import measure
from kbench.kinds.trace.session import CommandResult
from kbench.targets.base import TargetError, TargetInfo
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule
from kbench.targets.vm_target import VmTarget

KALLSYMS = "/proc/kallsyms"


class VmTraceHost:
    """A VmTarget's guest: kbench.ko's sysfs and commands through the guest agent."""

    def __init__(self, target: VmTarget):
        self.target = target

    def info(self) -> TargetInfo:
        return self.target.info()

    def sysinfo(self) -> dict[str, Any]:
        return self.target.sysinfo()

    def kbench_module(self) -> KbenchModule:
        self.target.start()
        if self.target.module is None:
            raise TargetError(f"kbench.ko is not loaded in the guest: {self.target.module_error}")
        return self.target.module

    def kallsyms(self) -> str:
        return self.target.start().read_file(KALLSYMS).decode(errors="replace")

    def run_workload(self, benchmark: Benchmark, request: RunRequest) -> Measurement:
        return measure(self.target, benchmark, request)

    def run_command(self, command: str, timeout: float) -> CommandResult:
        result = self.target.start().exec(command, timeout=timeout)
        return CommandResult(result.rc, result.text, result.stderr.decode(errors="replace"), result.timed_out)


class LocalTraceHost:
    """This machine's kernel, with kbench.ko already loaded (``insmod kbench.ko``, as root)."""

    def __init__(self) -> None:
        from kbench.targets.local import LocalTarget
        from kbench.targets.local_kmod import LocalSysfs, why_modules_cannot_load

        if not Path(SYSFS_ROOT).is_dir():
            reason = why_modules_cannot_load(platform.release()) or "kbench.ko is not loaded (insmod it first)"
            raise TargetError(f"cannot trace the local kernel {platform.release()}: {reason}; "
                              "or trace a kernel in qemu with --kernel deb:<release>")
        self.local = LocalTarget()
        self.module = KbenchModule(LocalSysfs())

    def info(self) -> TargetInfo:
        return self.local.info()

    def sysinfo(self) -> dict[str, Any]:
        return self.local.sysinfo()

    def kbench_module(self) -> KbenchModule:
        return self.module

    def kallsyms(self) -> str:
        return Path(KALLSYMS).read_text()

    def run_workload(self, benchmark: Benchmark, request: RunRequest) -> Measurement:
        return measure(self.local, benchmark, request)

    def run_command(self, command: str, timeout: float) -> CommandResult:
        # Its own process group, killed whole at the timeout, and gone with kbench (kbench.children).
        try:
            done = children.run(["/bin/sh", "-c", command], capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            out, err = exc.output or b"", exc.stderr or b""
            return CommandResult(-signal.SIGKILL, out.decode(errors="replace"), err.decode(errors="replace"), True)
        out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
        return CommandResult(done.returncode, out, err, False)
