"""Noise facts beyond the basic inventory: frequency driver, SMT, isolation, irqbalance,
thermal zones.

Read through a FileReader, like the rest of the run context, so a VM guest can be
described too. A fact that cannot be seen is None (the checklist says why).
"""

from __future__ import annotations

import os
from typing import Any

from kbench.sysinfo.files import FileReader

CPU_SYSFS = "/sys/devices/system/cpu"
MAX_THERMAL_ZONES = 64
"""Thermal zones are numbered from 0 without gaps; stop looking after this many."""


def scaling_driver(read: FileReader) -> dict[str, Any] | None:
    """cpu0's cpufreq driver and the governors it offers; None without cpufreq."""
    driver = read(f"{CPU_SYSFS}/cpu0/cpufreq/scaling_driver")
    if driver is None:
        return None
    available = read(f"{CPU_SYSFS}/cpu0/cpufreq/scaling_available_governors")
    return {
        "driver": driver,
        "available_governors": available.split() if available else None,
        "intel_pstate_status": read(f"{CPU_SYSFS}/intel_pstate/status"),
    }


def thermal_zones(read: FileReader) -> list[dict[str, Any]]:
    """Every /sys/class/thermal zone: type and temperature in °C (None if unreadable)."""
    zones = []
    for index in range(MAX_THERMAL_ZONES):
        base = f"/sys/class/thermal/thermal_zone{index}"
        kind = read(f"{base}/type")
        if kind is None:
            break
        temp = read(f"{base}/temp")
        try:
            celsius = int(temp) / 1000 if temp is not None else None
        except ValueError:
            celsius = None
        zones.append({"zone": index, "type": kind, "temp_c": celsius})
    return zones


def irqbalance_running(proc: str = "/proc") -> bool | None:
    """Whether an irqbalance process runs on this machine (scan of /proc/*/comm)."""
    try:
        pids = [name for name in os.listdir(proc) if name.isdigit()]
    except OSError:
        return None
    for pid in pids:
        try:
            with open(f"{proc}/{pid}/comm") as comm:
                if comm.read().strip() == "irqbalance":
                    return True
        except OSError:
            continue  # the process ended while we looked
    return False


def collect_noise_facts(read: FileReader, *, local: bool = True) -> dict[str, Any]:
    """The extra keys of ``sysinfo["noise"]``; irqbalance only for this machine."""
    return {
        "scaling": scaling_driver(read),
        "smt_active": read(f"{CPU_SYSFS}/smt/active"),
        "isolated": read(f"{CPU_SYSFS}/isolated"),
        "nohz_full_cpus": read(f"{CPU_SYSFS}/nohz_full"),
        "thermal": thermal_zones(read),
        "irqbalance_running": irqbalance_running() if local else None,
    }
