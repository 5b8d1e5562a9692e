"""The run context: what machine and kernel a run saw, and the noise settings in force.

Everything here reads /proc and /sys only, never changes them, and reports a knob that
is not visible as ``None`` rather than guessing.
"""

from __future__ import annotations

import platform
import shutil
import subprocess
from typing import Any

from kbench import children
from kbench.sysinfo.files import FileReader, read_local_file
from kbench.sysinfo.noise_facts import collect_noise_facts

TSC_FLAGS = ("tsc", "rdtscp", "constant_tsc", "nonstop_tsc", "tsc_known_freq")


def count_cpus(online: str | None) -> int | None:
    """Number of CPUs in a kernel CPU list such as ``0-3,6``."""
    if not online:
        return None
    total = 0
    for part in online.split(","):
        low, _, high = part.partition("-")
        total += int(high or low) - int(low) + 1
    return total


def _cpuinfo(read: FileReader) -> dict[str, Any]:
    text = read("/proc/cpuinfo") or ""
    model = None
    flags: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    online = read("/sys/devices/system/cpu/online")
    return {
        "model": model,
        "count": count_cpus(online),
        "online": online,
        "tsc_flags": {flag: flag in flags for flag in TSC_FLAGS},
        "hypervisor_flag": "hypervisor" in flags,
    }


def _memory_bytes(read: FileReader) -> int | None:
    for line in (read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def _systemd_detect_virt(flag: str) -> str | None:
    if not shutil.which("systemd-detect-virt"):
        return None
    try:
        out = children.run(["systemd-detect-virt", flag], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out or None


def detect_virtualization(hypervisor_flag: bool, *, ask_systemd: bool = True) -> dict[str, Any]:
    """What this kernel runs under: a hypervisor (``"kvm"``, ``"none"`` …) and a container.

    ``vm`` is None when it cannot be told; the CPUID hypervisor flag is kept as evidence.
    ``ask_systemd`` is False when describing another machine (a VM guest).
    """
    vm = _systemd_detect_virt("--vm") if ask_systemd else None
    if vm is None and hypervisor_flag:
        vm = "unknown-hypervisor"
    return {
        "vm": vm,
        "container": _systemd_detect_virt("--container") if ask_systemd else None,
        "hypervisor_flag": hypervisor_flag,
        "virtualized": bool(hypervisor_flag or (vm not in (None, "none"))),
    }


def _governors(read: FileReader, cpus: int | None) -> dict[str, str] | None:
    found = {}
    for cpu in range(cpus or 0):
        governor = read(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor")
        if governor is not None:
            found[f"cpu{cpu}"] = governor
    return found or None


def _turbo(read: FileReader) -> dict[str, Any] | None:
    no_turbo = read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if no_turbo is not None:
        return {"driver": "intel_pstate", "enabled": no_turbo == "0"}
    boost = read("/sys/devices/system/cpu/cpufreq/boost")
    if boost is not None:
        return {"driver": "cpufreq", "enabled": boost == "1"}
    return None


def _cmdline_flag(cmdline: str, name: str) -> str | None:
    for word in cmdline.split():
        if word.startswith(name + "="):
            return word.split("=", 1)[1]
    return None


def collect_sysinfo(read: FileReader = read_local_file, *, local: bool = True) -> dict[str, Any]:
    """The machine inventory and noise state, as a JSON-serialisable dict.

    ``read`` reads files of the machine described (this one by default, or a VM guest
    through its agent); ``local`` allows asking this machine's tools (systemd-detect-virt).
    """
    cpu = _cpuinfo(read)
    cmdline = read("/proc/cmdline") or ""
    loadavg = (read("/proc/loadavg") or "").split()
    return {
        "hostname": read("/proc/sys/kernel/hostname"),
        "cpu": cpu,
        "memory_bytes": _memory_bytes(read),
        "kernel": {
            "release": read("/proc/sys/kernel/osrelease"),
            "version": read("/proc/sys/kernel/version"),
            "machine": platform.machine() if local else None,
            "cmdline": cmdline,
        },
        "virtualization": detect_virtualization(cpu["hypervisor_flag"], ask_systemd=local),
        "noise": {
            "governor": _governors(read, cpu["count"]),
            "turbo": _turbo(read),
            "smt": read("/sys/devices/system/cpu/smt/control"),
            "aslr": read("/proc/sys/kernel/randomize_va_space"),
            "isolcpus": _cmdline_flag(cmdline, "isolcpus"),
            "nohz_full": _cmdline_flag(cmdline, "nohz_full"),
            "loadavg_1m": float(loadavg[0]) if loadavg else None,
            **collect_noise_facts(read, local=local),
        },
    }


GUEST_MARK = "guest"
"""Separates the host's facts from the VM's configuration in a guest run's fingerprint."""


def machine_fingerprint(info: dict[str, Any]) -> str:
    """A stable identity for the machine that measured: hostname, CPU model and count, memory.

    A run in a guest (its sysinfo carries the host's as ``host``) was measured by the host
    and the VM's configuration: the host's four facts, ``guest``, then the guest's CPU model
    and count and the memory the VM was given (``vm_config.memory_mb``; empty for runs
    stored before it was kept). The memory the guest kernel reports is left out: two
    kernels booted in one VM report different amounts, and the kernel is what varies.
    """
    host = info.get("host")
    if isinstance(host, dict) and host:
        cpu = info.get("cpu") or {}
        memory_mb = (info.get("vm_config") or {}).get("memory_mb")
        guest = (GUEST_MARK, cpu.get("model"), cpu.get("count"), "" if memory_mb is None else memory_mb)
        return "|".join([_facts(host), *(str(part) for part in guest)])
    return _facts(info)


def machine_facts(info: dict[str, Any]) -> dict[str, Any]:
    """The machine row's hostname, CPU model, CPU count and memory: the host's for a guest run."""
    host = info.get("host")
    source = host if isinstance(host, dict) and host else info
    cpu = source.get("cpu") or {}
    return {"hostname": source.get("hostname"), "cpu_model": cpu.get("model"), "cpu_count": cpu.get("count"),
            "memory_bytes": source.get("memory_bytes")}


def _facts(info: dict[str, Any]) -> str:
    cpu = info.get("cpu") or {}
    return "|".join(
        str(part)
        for part in (info.get("hostname"), cpu.get("model"), cpu.get("count"), info.get("memory_bytes"))
    )


def machine_summary(info: dict[str, Any]) -> str:
    """``vm: AMD EPYC x 2, 23.5 GiB`` (hostname: CPU model x count, memory); for a guest run the
    host's, then ``; guest QEMU TCG CPU version 2.5+ x 2, 1024 MiB``."""
    facts = machine_facts(info)
    parts = [f"{facts['cpu_model'] or '?'} x {facts['cpu_count'] or '?'}"]
    if facts["memory_bytes"]:
        parts.append(f"{facts['memory_bytes'] / 2**30:.1f} GiB")
    text = f"{facts['hostname'] or '?'}: {', '.join(parts)}"
    host = info.get("host")
    if isinstance(host, dict) and host:
        cpu = info.get("cpu") or {}
        memory_mb = (info.get("vm_config") or {}).get("memory_mb")
        text += f"; guest {cpu.get('model') or '?'} x {cpu.get('count') or '?'}"
        text += f", {memory_mb} MiB" if memory_mb else ""
    return text
