"""The run context the probe measured around its measured region (header ``usage``).

The probe snapshots the measuring thread's accounting (CPU time, run-queue wait,
context switches, faults) and the machine's ``/proc/stat`` just before the first and
just after the last measured sample; this module turns the header object into a typed
record and derives the fractions the disturbance warnings judge
(``kbench.engine.warnings``). Format: docs/probe-format.md, "usage".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MIN_STAT_TICKS = 20
"""/proc/stat counts in USER_HZ ticks (10 ms of one CPU at 100 Hz): with fewer ticks over
all CPUs (or, for one CPU's fraction, fewer per CPU) a busy fraction is off by up to ±2
ticks in 20, too coarse to show or judge: it is "too short to measure"."""
MIN_THREAD_WALL_S = 0.001
"""Below 1 ms of measured wall time the thread's share of it is not shown: its CPU clock is
read around the snapshot's own reads (rusage, schedstat: tens of µs) that the wall clock
leaves out, which is then a sizeable part of the ratio."""
TOO_SHORT = "too short to measure"


@dataclass(frozen=True)
class MachineUsage:
    """The whole machine between the two snapshots, from ``/proc/stat``.

    Fractions are of ``ticks`` (USER_HZ units summed over every online CPU); with
    100 Hz accounting one tick is 10 ms of one CPU, so short runs are coarse.
    """

    cpus: int
    user_hz: int
    ticks: int
    busy_fraction: float | None
    steal_fraction: float | None
    per_cpu_busy: dict[int, float | None]

    @property
    def measurable(self) -> bool:
        """Enough ticks (MIN_STAT_TICKS over all CPUs) for the machine's fractions to mean something."""
        return self.ticks >= MIN_STAT_TICKS

    @property
    def per_cpu_measurable(self) -> bool:
        """Enough ticks per CPU (MIN_STAT_TICKS each, on average) for one CPU's fraction."""
        return self.cpus > 0 and self.ticks / self.cpus >= MIN_STAT_TICKS


@dataclass(frozen=True)
class RunUsage:
    """What the measuring thread (and the probe) consumed during the measured region."""

    wall_s: float
    thread_cpu_s: float
    thread_user_s: float
    thread_sys_s: float
    runqueue_wait_s: float | None
    voluntary_ctxsw: int
    involuntary_ctxsw: int
    minor_faults: int
    major_faults: int
    process_cpu_s: float
    children_cpu_s: float
    migrations: int | None
    pinned_cpu: int | None
    machine: MachineUsage | None

    @property
    def on_cpu_fraction(self) -> float | None:
        """Thread CPU time / wall time, at most 1; None below MIN_THREAD_WALL_S of wall time.

        The CPU clock's two readings enclose the snapshot's own reads, which the wall
        clock's do not: a thread that ran throughout shows slightly more CPU time than
        wall time, which is read as 1 (it never runs longer than the wall time).
        """
        if self.wall_s < MIN_THREAD_WALL_S:
            return None
        return min(self.thread_cpu_s / self.wall_s, 1.0)

    @property
    def preempted_fraction(self) -> float | None:
        """Share of the wall time the thread was runnable but not running.

        From the scheduler's run-queue wait (``/proc/thread-self/schedstat``) when the
        kernel has it. Without it, the time off CPU counts as preempted only if the
        thread never blocked on its own (no voluntary switch); otherwise it cannot be
        told from waiting by design (pipe peer, ``command`` child) and is None.
        """
        if self.wall_s <= 0:
            return None
        if self.runqueue_wait_s is not None:
            return max(self.runqueue_wait_s, 0.0) / self.wall_s
        if self.voluntary_ctxsw == 0:
            return max(1.0 - self.thread_cpu_s / self.wall_s, 0.0)
        return None

    @property
    def involuntary_per_s(self) -> float | None:
        """Involuntary context switches (preemptions) per second of wall time."""
        return self.involuntary_ctxsw / self.wall_s if self.wall_s > 0 else None

    @property
    def outside_busy_fraction(self) -> float | None:
        """Share of the machine's CPU capacity used by everything except this probe.

        (machine busy CPU-seconds − the probe's own CPU time − its children's) divided
        by the capacity (CPUs × wall), floored at 0. The probe's CPU time includes
        helper threads; children are counted when reaped (``command`` runs, the pipe
        peer at tear-down, which includes its warm-up and so errs low).
        """
        machine = self.machine
        if machine is None or machine.busy_fraction is None or not machine.measurable:
            return None
        capacity_s = machine.ticks / machine.user_hz
        busy_s = machine.busy_fraction * capacity_s
        own_s = self.process_cpu_s + self.children_cpu_s
        return max(busy_s - own_s, 0.0) / capacity_s


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _machine(data: Any) -> MachineUsage | None:
    if not isinstance(data, dict):
        return None
    return MachineUsage(
        cpus=int(data.get("cpus") or 0),
        user_hz=int(data.get("user_hz") or 100),
        ticks=int(data.get("ticks") or 0),
        busy_fraction=_float(data.get("busy_fraction")),
        steal_fraction=_float(data.get("steal_fraction")),
        per_cpu_busy={int(cpu): _float(v) for cpu, v in (data.get("per_cpu_busy") or {}).items()},
    )


def parse_usage(header: dict[str, Any]) -> RunUsage | None:
    """The ``usage`` object of a probe header as a RunUsage; None when absent (older
    probes, suites, in-kernel runs)."""
    data = header.get("usage")
    if not isinstance(data, dict):
        return None
    cpu = header.get("cpu") or {}
    migrations = cpu.get("migrations")
    pinned = cpu.get("pinned")
    return RunUsage(
        wall_s=float(data.get("wall_s") or 0.0),
        thread_cpu_s=float(data.get("thread_cpu_s") or 0.0),
        thread_user_s=float(data.get("thread_user_s") or 0.0),
        thread_sys_s=float(data.get("thread_sys_s") or 0.0),
        runqueue_wait_s=_float(data.get("runqueue_wait_s")),
        voluntary_ctxsw=int(data.get("voluntary_ctxsw") or 0),
        involuntary_ctxsw=int(data.get("involuntary_ctxsw") or 0),
        minor_faults=int(data.get("minor_faults") or 0),
        major_faults=int(data.get("major_faults") or 0),
        process_cpu_s=float(data.get("process_cpu_s") or 0.0),
        children_cpu_s=float(data.get("children_cpu_s") or 0.0),
        migrations=None if migrations is None else int(migrations),
        pinned_cpu=None if pinned is None else int(pinned),
        machine=_machine(data.get("machine")),
    )


def _pct(value: float | None) -> str:
    return "?" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def usage_lines(usage: RunUsage) -> list[str]:
    """The run context as a few lines of text (``kbench show``/``run``); a fraction from too
    few clock ticks (or too short a wall time) says "too short to measure" instead."""
    lines = [_thread_line(usage)]
    rate = usage.involuntary_per_s
    pinned = "not pinned" if usage.pinned_cpu is None else f"pinned to CPU {usage.pinned_cpu}"
    migrations = "?" if usage.migrations is None else str(usage.migrations)
    lines.append(
        f"context switches {usage.voluntary_ctxsw} voluntary, {usage.involuntary_ctxsw} involuntary"
        f"{'' if rate is None else f' ({rate:.0f}/s)'}; migrations {migrations} ({pinned}); "
        f"faults {usage.minor_faults} minor, {usage.major_faults} major"
    )
    lines.append(_machine_line(usage))
    return lines


def _thread_line(usage: RunUsage) -> str:
    times = f"(user {usage.thread_user_s:.3f} s, sys {usage.thread_sys_s:.3f} s)"
    on_cpu = usage.on_cpu_fraction
    if on_cpu is None:
        return f"thread on CPU: {TOO_SHORT} in {1000 * usage.wall_s:.3g} ms {times}"
    waited = (
        f", waited for a CPU {_pct(min(usage.runqueue_wait_s / usage.wall_s, 1.0))}"
        if usage.runqueue_wait_s is not None else ""
    )
    return f"thread on CPU {_pct(on_cpu)} of {usage.wall_s:.3f} s {times}{waited}"


def _machine_line(usage: RunUsage) -> str:
    machine = usage.machine
    if machine is None:
        return "machine utilisation not visible (/proc/stat unreadable)"
    ticks = f"{machine.ticks} ticks at {machine.user_hz} Hz"
    if not machine.measurable or machine.busy_fraction is None:
        return f"machine busy: {TOO_SHORT} ({ticks} over {machine.cpus} CPUs, fewer than {MIN_STAT_TICKS})"
    per_cpu = ", ".join(
        f"{cpu}: {_pct(busy)}" for cpu, busy in sorted(machine.per_cpu_busy.items())
        if busy is not None and not math.isnan(busy)
    )
    per_cpu_part = f"; per CPU {per_cpu}" if per_cpu and machine.per_cpu_measurable else ""
    return (
        f"machine busy {_pct(machine.busy_fraction)} of {machine.cpus} CPUs "
        f"(other than this probe {_pct(usage.outside_busy_fraction)}{per_cpu_part}), "
        f"steal {_pct(machine.steal_fraction)}, {ticks}"
    )
