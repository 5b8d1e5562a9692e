"""Per-thread CPU utilisation between a log's reset and finalize (seL4's track_utilisation).

Per CPU: the cycles each thread ran there (context-switch accounting), the idle cycles,
and the total (finalize - reset). From kbench.ko's ``trace/entries/threads`` or rebuilt
from sched_switch events (``trace.tracefs``). The benchmark's threads are found by name
and by the process tree (``measured_threads``); the rest are "others".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from kbench.targets.key_values import parse_key_values

PROBE_COMM = "kbench-probe"
KTHREAD_PREFIX = "kbench/"


@dataclass(frozen=True)
class ThreadTime:
    cpu: int
    pid: int
    tgid: int
    ppid: int
    comm: str
    cycles: int
    switches: int


@dataclass(frozen=True)
class CpuTime:
    cpu: int
    start: int
    end: int
    idle: int
    lost: int = 0  # cycles of threads kbench.ko's table had no room for
    lost_threads: int = 0

    @property
    def total(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class CpuSplit:
    """One CPU's window: the benchmark's threads, other threads, idle, unaccounted, total."""

    cpu: int
    measured: int
    others: int
    idle: int
    lost: int
    total: int

    @property
    def accounted(self) -> int:
        return self.measured + self.others + self.idle + self.lost


@dataclass(frozen=True)
class Utilisation:
    source: str  # "kbench.ko" or "tracefs"
    tsc_khz: int
    cpus: list[CpuTime]
    threads: list[ThreadTime]
    measured: frozenset[int] = frozenset()  # pids of the benchmark's threads
    measured_cpus: tuple[int, ...] = ()  # the CPUs the benchmark ran on (empty: all)
    notes: list[str] = field(default_factory=list)

    def with_measured(self, pids: Iterable[int], cpus: Iterable[int] = ()) -> Utilisation:
        return Utilisation(self.source, self.tsc_khz, self.cpus, self.threads, frozenset(pids), tuple(cpus),
                           self.notes)

    def split(self) -> list[CpuSplit]:
        found = []
        for cpu in self.cpus:
            mine = [t for t in self.threads if t.cpu == cpu.cpu]
            measured = sum(t.cycles for t in mine if t.pid in self.measured)
            others = sum(t.cycles for t in mine if t.pid not in self.measured)
            found.append(CpuSplit(cpu.cpu, measured, others, cpu.idle, cpu.lost, cpu.total))
        return found

    def fractions(self) -> dict[str, float]:
        """Shares of the measured CPUs' time (all CPUs if none): measured, others, idle."""
        chosen = [s for s in self.split() if not self.measured_cpus or s.cpu in self.measured_cpus]
        total = sum(s.total for s in chosen)
        if total <= 0:
            return {}
        return {
            "thread": sum(s.measured for s in chosen) / total,
            "others": sum(s.others + s.lost for s in chosen) / total,
            "idle": sum(s.idle for s in chosen) / total,
        }

    def thread_seconds(self) -> float:
        return sum(t.cycles for t in self.threads if t.pid in self.measured) / (self.tsc_khz * 1e3)

    def busiest_others(self, limit: int = 5) -> list[tuple[str, int, int]]:
        """(comm, pid, cycles) of the other threads that ran most on the measured CPUs."""
        totals: dict[tuple[str, int], int] = {}
        for t in self.threads:
            if t.pid in self.measured or (self.measured_cpus and t.cpu not in self.measured_cpus):
                continue
            totals[(t.comm, t.pid)] = totals.get((t.comm, t.pid), 0) + t.cycles
        ranked = sorted(totals.items(), key=lambda item: -item[1])[:limit]
        return [(comm, pid, cycles) for (comm, pid), cycles in ranked]

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source, "tsc_khz": self.tsc_khz,
            "cpus": [asdict(c) for c in self.cpus], "threads": [asdict(t) for t in self.threads],
            "measured": sorted(self.measured), "measured_cpus": list(self.measured_cpus), "notes": self.notes,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Utilisation:
        return cls(
            source=str(data["source"]), tsc_khz=int(data["tsc_khz"]),
            cpus=[CpuTime(**c) for c in data["cpus"]], threads=[ThreadTime(**t) for t in data["threads"]],
            measured=frozenset(int(p) for p in data.get("measured", [])),
            measured_cpus=tuple(int(c) for c in data.get("measured_cpus", [])),
            notes=[str(n) for n in data.get("notes", [])],
        )


def parse_kernel_threads(text: str, tsc_khz: int) -> Utilisation:
    """kbench.ko's ``trace/entries/threads`` (docs/sysfs-ABI.md)."""
    cpus: list[CpuTime] = []
    threads: list[ThreadTime] = []
    for line in text.splitlines():
        head, sep, comm = line.partition(" comm=")
        fields = parse_key_values(head)
        if not fields:
            continue
        if sep:
            threads.append(ThreadTime(
                cpu=int(fields["cpu"]), pid=int(fields["pid"]), tgid=int(fields["tgid"]),
                ppid=int(fields.get("ppid", 0)), comm=comm, cycles=int(fields["cycles"]),
                switches=int(fields["switches"]),
            ))
        else:
            cpus.append(CpuTime(cpu=int(fields["cpu"]), start=int(fields["start"]), end=int(fields["end"]),
                                idle=int(fields["idle"]), lost=int(fields.get("lost", 0)),
                                lost_threads=int(fields.get("lost_threads", 0))))
    return Utilisation("kbench.ko", tsc_khz, cpus, threads)


def measured_threads(util: Utilisation, *, in_kernel: bool) -> set[int]:
    """The benchmark's threads: kbench.ko's workers (``kbench/N``) for a run inside kbench.ko
    (``in_kernel``); the probe and every process it started (the ``command`` workload's
    children) otherwise."""
    if in_kernel:
        return {t.pid for t in util.threads if t.comm.startswith(KTHREAD_PREFIX)}
    roots = {t.tgid for t in util.threads if t.comm == PROBE_COMM}
    processes = set(roots)
    changed = True
    while changed:
        before = len(processes)
        processes |= {t.tgid for t in util.threads if t.ppid in processes}
        changed = len(processes) != before
    return {t.pid for t in util.threads if t.tgid in processes}
