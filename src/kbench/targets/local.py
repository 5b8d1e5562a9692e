"""The local target: run the probe on the kernel this machine is running."""

from __future__ import annotations

import os
import platform
import signal
import subprocess
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from kbench import children
from kbench.native import find_native
from kbench.sysinfo.collect import collect_sysinfo
from kbench.targets.base import ProbeInvocation, ProgressCallback, TargetInfo
from kbench.targets.kernel_identity import kernel_identity, local_kernel_config
from kbench.targets.kmod_sysfs import KbenchModule
from kbench.targets.local_kmod import kbench_ko_loaded
from kbench.targets.transport import GuestShell


class LocalTarget:
    """Runs ``kbench-probe`` and tools as child processes of this one, kbench.ko in this kernel.

    kfunc benchmarks load kbench.ko into the running kernel only when ``load_modules``
    says the user agreed to it (``kbench run --local-kernel``). ``cwd``: the directory
    the probe (and so a ``command``) runs in, e.g. a commit's worktree; None: this one's.
    """

    in_guest = False

    def __init__(self, *, load_modules: bool = False, cwd: Path | None = None) -> None:
        self.load_modules = load_modules
        self.cwd = cwd
        self.module_benchmarks: list[list[str]] = []  # per user module loaded for it: its benchmarks

    def info(self) -> TargetInfo:
        uname = platform.uname()
        config = local_kernel_config(uname.release)
        return TargetInfo(kind="local", kernel_release=uname.release, kernel_version=uname.version,
                          kernel_config=config, details={"kernel": kernel_identity(None, config)})

    def sysinfo(self) -> dict[str, Any]:
        return collect_sysinfo()

    def kbench_module(self, benchmark: str) -> AbstractContextManager[KbenchModule]:
        return kbench_ko_loaded(benchmark, allowed=self.load_modules)

    def guest_shell(self, tools: Sequence[str]) -> GuestShell | None:
        return None  # tools run on this machine

    def run_probe(
        self, args: Sequence[str], progress: ProgressCallback | None = None, bound: float | None = None,
        spill: Path | None = None,
    ) -> ProbeInvocation:
        """No bound here: Ctrl-C stops a run on this machine. The probe writes the spill itself."""
        probe = find_native("kbench-probe")
        with children.scratch_dir("kbench-") as tmp:
            output = tmp / "samples.bin"
            argv = [str(probe), *args[:1], "--output", str(output), *args[1:]]
            if spill is not None:
                argv += ["--spill", str(spill)]
            if progress is not None:
                argv.append("--progress")
            interrupted = False
            stderr_lines: list[str] = []
            with children.spawn(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=self.cwd) as proc:
                try:
                    _pump_stderr(proc, stderr_lines, progress)
                    proc.wait()
                except KeyboardInterrupt:
                    # The probe runs in a session of its own: neither a terminal's Ctrl-C
                    # nor a SIGTERM to kbench reaches it, so pass the interrupt on. It stops
                    # at the next sample boundary and still writes every finished sample.
                    interrupted = True
                    _forward_interrupt(proc)
                    remaining = proc.stderr.read() if proc.stderr else b""
                    stderr_lines.extend(remaining.decode(errors="replace").splitlines())
            data = output.read_bytes() if output.exists() else b""
        messages = [line for line in stderr_lines if not line.startswith("progress ")]
        return ProbeInvocation(
            stdout=data,
            stderr="\n".join(messages),
            exit_code=proc.returncode,
            interrupted=interrupted or proc.returncode == 130,
        )


def _pump_stderr(
    proc: subprocess.Popen[bytes], lines: list[str], progress: ProgressCallback | None
) -> None:
    assert proc.stderr is not None
    for raw in proc.stderr:
        line = raw.decode(errors="replace").rstrip("\n")
        if line.startswith("progress "):
            if progress is not None:
                parts = line.split()
                if len(parts) == 3:
                    progress(float(parts[1]), float(parts[2]))
            continue
        lines.append(line)


def _forward_interrupt(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT to the probe; a second interrupt is passed on too (the probe then gives up at once)."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGINT)
    while True:
        try:
            proc.wait(timeout=30)
            return
        except KeyboardInterrupt:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGINT)
            continue
        except subprocess.TimeoutExpired:
            proc.kill()
