"""The warnings a user sees next to a run: named cases, each with its threshold."""

from __future__ import annotations

from typing import Any

from kbench.contract.measurement import Measurement
from kbench.stats.summary import Summary
from kbench.sysinfo.checklist import HIGH_LOAD_PER_CPU
from kbench.sysinfo.usage import RunUsage, parse_usage

# Disturbance of the measured region (the probe header's ``usage``), judged after the run.
MIN_ON_CPU_FRACTION = 0.90
"""The measuring thread must have been running for at least this share of the wall
time it wanted a CPU: a run-queue wait above 10% means another task shared its CPU
(one CPU hog on the same CPU makes it ~50% under CFS)."""
MAX_INVOLUNTARY_SWITCHES_PER_S = 10.0
"""Preemptions per second above which a run counts as interrupted. An idle, pinned CPU
sees a few per second from kernel housekeeping (kworkers, RCU); a competing task on the
same CPU causes one per scheduler slice, i.e. hundreds per second."""
MIN_INVOLUNTARY_SWITCHES = 5
"""Fewer preemptions than this are never reported (one switch in a 50 ms run is 20/s)."""
MAX_OUTSIDE_BUSY_FRACTION = 0.25
"""Other work using more than a quarter of the machine's CPU capacity during the run
competes for caches, memory bandwidth and (in a VM) the host: worth a warning."""
MAX_STEAL_FRACTION = 0.05
"""Hypervisor steal time above 5% of the machine's time: the vCPUs were not running."""


def run_warnings(
    measurement: Measurement, summary: Summary | None, sysinfo: dict[str, Any]
) -> list[str]:
    """Probe warnings, statistical warnings and run-context warnings, in that order."""
    found = [str(w) for w in measurement.header.get("warnings", [])]
    failed = failure_warning(measurement.header)
    if failed:
        found.append(failed)
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
    usage = parse_usage(measurement.header)
    if usage is not None:
        found.extend(usage_warnings(usage))
    return found


def failure_warning(header: dict[str, Any]) -> str | None:
    """``failed executions: …`` when failed executions were timed (``--ignore-failure``), else None."""
    failure = header.get("failure")
    if not isinstance(failure, dict) or failure.get("stopped"):
        return None
    measured, before = int(failure.get("count") or 0), int(failure.get("before") or 0)
    if not measured and not before:
        return None
    last = f"; last: {failure['last']}" if failure.get("last") else ""
    return (f"failed executions: {measured} in the {int(header.get('n') or 0)} measured samples, timed anyway "
            f"(--ignore-failure); {before} more in calibration and warm-up{last}")


def usage_warnings(usage: RunUsage) -> list[str]:
    """Disturbances of the measured region, each a ``disturbed run: ...`` line.

    Checked: the thread was preempted (run-queue wait, or time off CPU without ever
    blocking, above 1 − MIN_ON_CPU_FRACTION of the wall time); preemptions per second;
    other work on the machine (MAX_OUTSIDE_BUSY_FRACTION) and steal time, both only
    with enough /proc/stat ticks (MachineUsage.measurable); major page faults. CPU migrations
    are reported by the probe itself (header ``warnings``).
    """
    found = []
    preempted = usage.preempted_fraction
    if preempted is not None and preempted > 1.0 - MIN_ON_CPU_FRACTION:
        how = "waited for a CPU" if usage.runqueue_wait_s is not None else "was off CPU without blocking"
        found.append(
            f"disturbed run: the measuring thread {how} {100 * preempted:.0f}% of the "
            f"{usage.wall_s:.3g} s measured (on CPU {100 * (usage.on_cpu_fraction or 0):.0f}%): "
            "another task shared its CPU; pin it (--cpu) to an idle or isolated CPU"
        )
    rate = usage.involuntary_per_s
    if (
        rate is not None
        and usage.involuntary_ctxsw >= MIN_INVOLUNTARY_SWITCHES
        and rate > MAX_INVOLUNTARY_SWITCHES_PER_S
    ):
        found.append(
            f"disturbed run: the measuring thread was preempted {usage.involuntary_ctxsw} times "
            f"({rate:.0f}/s): samples that contain a switch are outliers"
        )
    machine = usage.machine
    if machine is not None and machine.measurable:
        outside = usage.outside_busy_fraction
        if outside is not None and outside > MAX_OUTSIDE_BUSY_FRACTION:
            found.append(
                f"disturbed run: other work used {100 * outside:.0f}% of the machine's "
                f"{machine.cpus} CPUs during the measurement"
            )
        steal = machine.steal_fraction
        if steal is not None and steal > MAX_STEAL_FRACTION:
            found.append(
                f"disturbed run: the hypervisor stole {100 * steal:.0f}% of the CPU time "
                "during the measurement"
            )
    if usage.major_faults > 0:
        found.append(
            f"disturbed run: {usage.major_faults} major page faults (disk reads) in the measured region"
        )
    return found
