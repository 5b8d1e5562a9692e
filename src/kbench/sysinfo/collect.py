"""The run context: what machine and kernel a run saw, and the noise settings in force.

Everything here reads /proc and /sys only, never changes them, and reports a knob that
is not visible as ``None`` rather than guessing.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

TSC_FLAGS = ("tsc", "rdtscp", "constant_tsc", "nonstop_tsc", "tsc_known_freq")


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _cpuinfo() -> dict[str, Any]:
    text = _read("/proc/cpuinfo") or ""
    model = None
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return {
        "model": model or platform.processor() or None,
        "count": os.cpu_count(),
        "online": _read("/sys/devices/system/cpu/online"),
        "tsc_flags": {flag: flag in flags for flag in TSC_FLAGS},
        "hypervisor_flag": "hypervisor" in flags,
    }


def _memory_bytes() -> int | None:
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _systemd_detect_virt(flag: str) -> str | None:
    if not shutil.which("systemd-detect-virt"):
        return None
    try:
        out = subprocess.run(
            ["systemd-detect-virt", flag], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out or None


def detect_virtualization(hypervisor_flag: bool) -> dict[str, Any]:
    """What this kernel runs under: a hypervisor (``"kvm"``, ``"none"`` …) and a container.

    ``vm`` is None when it cannot be told; the CPUID hypervisor flag is kept as evidence.
    """
    vm = _systemd_detect_virt("--vm")
    if vm is None and hypervisor_flag:
        vm = "unknown-hypervisor"
    return {
        "vm": vm,
        "container": _systemd_detect_virt("--container"),
        "hypervisor_flag": hypervisor_flag,
        "virtualized": bool(hypervisor_flag or (vm not in (None, "none"))),
    }


def _governors() -> dict[str, str] | None:
    base = Path("/sys/devices/system/cpu")
    found = {
        path.parent.parent.name: path.read_text().strip()
        for path in sorted(base.glob("cpu[0-9]*/cpufreq/scaling_governor"))
        if path.is_file()
    }
    return found or None


def _turbo() -> dict[str, Any] | None:
    no_turbo = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None:
        return {"driver": "intel_pstate", "enabled": no_turbo == "0"}
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost is not None:
        return {"driver": "cpufreq", "enabled": boost == "1"}
    return None


def _cmdline_flag(cmdline: str, name: str) -> str | None:
    for word in cmdline.split():
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def collect_sysinfo() -> dict[str, Any]:
    """The machine inventory and noise state, as a JSON-serialisable dict."""
    cpu = _cpuinfo()
    cmdline = _read("/proc/cmdline") or ""
    loadavg = (_read("/proc/loadavg") or "").split()
    uname = platform.uname()
    return {
        "hostname": socket.gethostname(),
        "cpu": cpu,
        "memory_bytes": _memory_bytes(),
        "kernel": {
            "release": uname.release,
            "version": uname.version,
            "machine": uname.machine,
            "cmdline": cmdline,
        },
        "virtualization": detect_virtualization(cpu["hypervisor_flag"]),
        "noise": {
            "governor": _governors(),
            "turbo": _turbo(),
            "smt": _read("/sys/devices/system/cpu/smt/control"),
            "aslr": _read("/proc/sys/kernel/randomize_va_space"),
            "isolcpus": _cmdline_flag(cmdline, "isolcpus"),
            "nohz_full": _cmdline_flag(cmdline, "nohz_full"),
            "loadavg_1m": float(loadavg[0]) if loadavg else None,
        },
    }


def machine_fingerprint(info: dict[str, Any]) -> str:
    """A stable identity for the machine: hostname, CPU model and count, memory."""
    cpu = info.get("cpu", {})
    return "|".join(
        str(part)
        for part in (info.get("hostname"), cpu.get("model"), cpu.get("count"), info.get("memory_bytes"))
    )
