"""The warnings a user sees next to a run: named cases, each with its threshold."""

from __future__ import annotations

from typing import Any

from kbench.engine.measurement import Measurement
from kbench.stats.summary import Summary

HIGH_LOAD_PER_CPU = 0.5
"""A 1-minute load average above this many runnable tasks per CPU disturbs a run."""


def run_warnings(
    measurement: Measurement, summary: Summary | None, sysinfo: dict[str, Any]
) -> list[str]:
    """Probe warnings, statistical warnings and run-context warnings, in that order."""
    found = [str(w) for w in measurement.header.get("warnings", [])]
    if summary is not None:
        found.extend(summary.warnings)
    if measurement.interrupted:
        found.append(f"run interrupted: {measurement.n} finished samples kept")
    virt = sysinfo.get("virtualization") or {}
    if virt.get("virtualized"):
        found.append(
            f"running under a hypervisor ({virt.get('vm') or 'unknown'}): expect steal time "
            "and timer noise; compare only against runs on the same kind of machine"
        )
    noise = sysinfo.get("noise") or {}
    load = noise.get("loadavg_1m")
    cpus = (sysinfo.get("cpu") or {}).get("count") or 1
    if load is not None and load / cpus > HIGH_LOAD_PER_CPU:
        found.append(f"machine was busy at start: load average {load:.2f} on {cpus} CPUs")
    return found
