"""LKP's monitors (vmstat, mpstat, proc-vmstat, interrupts) from snapshots of the kernel's own counters.

A monitored run takes a snapshot of ``/proc/stat``, ``/proc/vmstat``, ``/proc/meminfo`` and
``/proc/interrupts`` right before the tool starts, every ``interval`` seconds while it runs and
right after it ends (``kbench.kinds.suite.monitoring``), each stamped with ``/proc/uptime``. One
iteration's snapshots become one value per monitor metric, named as 0-Day's tables name them:

- ``vmstat.*`` as vmstat(8) computes its columns: ``procs.r``/``procs.b`` (procs_running,
  procs_blocked), ``memory.swpd/free/buff/cache`` (kB, from /proc/meminfo; cache is Cached +
  SReclaimable) averaged over the snapshots; ``swap.si/so`` (kB/s, pswpin/pswpout pages),
  ``io.bi/bo`` (blocks/s: pgpgin/pgpgout, KiB), ``system.in/cs`` (interrupts and context
  switches per second: /proc/stat's intr and ctxt) and ``cpu.us/sy/id/wa/st`` (% of the CPU
  time: user+nice, system+irq+softirq, idle, iowait, steal) over the iteration, first to last
  snapshot;
- ``mpstat.cpu.all.*``: usr, nice, sys, iowait, irq, soft, steal, guest, idle in % of all CPUs'
  time over the iteration (mpstat's columns; guest time is also counted in usr, as the kernel does);
- ``proc-vmstat.NAME``: each /proc/vmstat event counter's increase over the iteration; its
  ``nr_*`` gauges averaged over the snapshots;
- ``interrupts.IRQ:DESCRIPTION``: each interrupt line's count over the iteration, all CPUs.

Monitor metrics are observations, not goals: each says what moved. They carry "lower is better"
(less kernel work for the same benchmark) so that a change has a sign, and the comparison judges
them with the same statistics as the benchmark's own metrics. Pure: text in, numbers out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kbench.contract.vocabulary import LOWER_IS_BETTER

MONITORS = ("vmstat", "mpstat", "proc-vmstat", "interrupts")
"""The monitors kbench takes (LKP's names)."""
SOURCES = {"vmstat": ("stat", "vmstat", "meminfo"), "mpstat": ("stat",), "proc-vmstat": ("vmstat",),
           "interrupts": ("interrupts",)}
"""The /proc files each monitor reads."""
DEFAULT_INTERVAL_S = 1.0
MAX_INTERVAL_S = 3600.0


class MonitorError(ValueError):
    """The snapshots cannot be read (fewer than two, or a file missing from one)."""


@dataclass(frozen=True)
class Snapshot:
    """One snapshot: its uptime stamp and the text of each /proc file, by name."""

    uptime: float
    files: dict[str, str]


@dataclass(frozen=True)
class MonitorValue:
    """One monitor metric's value for one iteration."""

    name: str
    unit: str
    value: float
    direction: str = LOWER_IS_BETTER


def sources(monitors: Sequence[str]) -> tuple[str, ...]:
    """The /proc files the ``monitors`` read, each once."""
    return tuple(dict.fromkeys(f for m in monitors for f in SOURCES[m]))


def parse_snapshots(text: str) -> list[Snapshot]:
    """The snapshots of a sampler's output: ``@@ UPTIME`` then ``== NAME`` and each file's text."""
    snapshots: list[Snapshot] = []
    uptime: float | None = None
    files: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("@@ "):
            if uptime is not None:
                snapshots.append(Snapshot(uptime, {k: "\n".join(v) for k, v in files.items()}))
            try:
                uptime = float(line[3:].split()[0])
            except (ValueError, IndexError):
                raise MonitorError(f"a snapshot's uptime is not a number: {line!r}") from None
            files, current = {}, None
        elif line.startswith("== "):
            current = files.setdefault(line[3:].strip(), [])
        elif current is not None:
            current.append(line)
    if uptime is not None:
        snapshots.append(Snapshot(uptime, {k: "\n".join(v) for k, v in files.items()}))
    return snapshots


def _stat(text: str) -> tuple[dict[str, list[int]], dict[str, int]]:
    """/proc/stat: the ``cpu`` lines' jiffies by name, and the single counters (ctxt, intr's total ...)."""
    cpus: dict[str, list[int]] = {}
    single: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0].startswith("cpu"):
            cpus[fields[0]] = [int(v) for v in fields[1:]]
        elif len(fields) >= 2 and fields[1].isdigit():
            single[fields[0]] = int(fields[1])
    return cpus, single


def _pairs(text: str) -> dict[str, int]:
    """``name value`` lines (/proc/vmstat) or ``Name: value kB`` lines (/proc/meminfo)."""
    found: dict[str, int] = {}
    for line in text.splitlines():
        fields = line.replace(":", " ").split()
        if len(fields) >= 2 and fields[1].lstrip("-").isdigit():
            found[fields[0]] = int(fields[1])
    return found


def _interrupts(text: str) -> dict[str, int]:
    """/proc/interrupts: each line's count summed over the CPUs, named ``IRQ:description``."""
    lines = text.splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    found: dict[str, int] = {}
    for line in lines[1:]:
        irq, _, rest = line.partition(":")
        fields = rest.split()
        counts = [int(v) for v in fields[:ncpu] if v.isdigit()]
        if not irq.strip() or not counts:
            continue
        words = fields[len(counts):]
        if irq.strip().isdigit():  # chip, hw irq, trigger, then the device: keep the words that name it
            words = words[-1:] + words[:-1] if words else []
        description = re.sub(r"[^A-Za-z0-9_.+-]+", "_", "_".join(words[:4])).strip("_") or "irq"
        found[f"{irq.strip()}:{description}"] = sum(counts)
    return found


def _require(snapshots: Sequence[Snapshot], names: Sequence[str]) -> None:
    if len(snapshots) < 2:
        raise MonitorError(f"{len(snapshots)} snapshot(s): a monitor needs one before and one after the run")
    for snap in snapshots:
        missing = [n for n in names if n not in snap.files]
        if missing:
            raise MonitorError(f"the snapshot at {snap.uptime:g} s lacks /proc/{', /proc/'.join(missing)}")
    if snapshots[-1].uptime <= snapshots[0].uptime:
        raise MonitorError("the snapshots span no time (uptime did not advance)")


def _cpu_share(first: list[int], last: list[int]) -> list[float]:
    delta = [b - a for a, b in zip(first, last, strict=False)]
    total = sum(delta[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return [100.0 * d / total if total > 0 else 0.0 for d in delta] + [0.0] * (10 - len(delta))


def vmstat(snapshots: Sequence[Snapshot]) -> list[MonitorValue]:
    """vmstat(8)'s columns over the iteration (see the module's docstring)."""
    _require(snapshots, SOURCES["vmstat"])
    first, last = snapshots[0], snapshots[-1]
    seconds = last.uptime - first.uptime
    stats = [_stat(s.files["stat"]) for s in snapshots]
    vm = [_pairs(s.files["vmstat"]) for s in snapshots]
    mem = [_pairs(s.files["meminfo"]) for s in snapshots]

    def mean(values: list[float]) -> float:
        return sum(values) / len(values)

    def rate(counters: list[dict[str, int]], name: str) -> float:
        return (counters[-1].get(name, 0) - counters[0].get(name, 0)) / seconds

    page_kb = 4  # pswpin/pswpout count pages; vmstat prints kB
    us, ni, sy, idle, wa, irq, soft, st = _cpu_share(stats[0][0]["cpu"], stats[-1][0]["cpu"])[:8]
    singles = [single for _, single in stats]
    return [
        MonitorValue("vmstat.procs.r", "tasks", mean([s.get("procs_running", 0) for s in singles])),
        MonitorValue("vmstat.procs.b", "tasks", mean([s.get("procs_blocked", 0) for s in singles])),
        MonitorValue("vmstat.memory.swpd", "kB", mean([m.get("SwapTotal", 0) - m.get("SwapFree", 0) for m in mem])),
        MonitorValue("vmstat.memory.free", "kB", mean([m.get("MemFree", 0) for m in mem])),
        MonitorValue("vmstat.memory.buff", "kB", mean([m.get("Buffers", 0) for m in mem])),
        MonitorValue("vmstat.memory.cache", "kB", mean([m.get("Cached", 0) + m.get("SReclaimable", 0) for m in mem])),
        MonitorValue("vmstat.swap.si", "kB/s", rate(vm, "pswpin") * page_kb),
        MonitorValue("vmstat.swap.so", "kB/s", rate(vm, "pswpout") * page_kb),
        MonitorValue("vmstat.io.bi", "blocks/s", rate(vm, "pgpgin")),
        MonitorValue("vmstat.io.bo", "blocks/s", rate(vm, "pgpgout")),
        MonitorValue("vmstat.system.in", "/s", rate(singles, "intr")),
        MonitorValue("vmstat.system.cs", "/s", rate(singles, "ctxt")),
        MonitorValue("vmstat.cpu.us", "%", us + ni),
        MonitorValue("vmstat.cpu.sy", "%", sy + irq + soft),
        MonitorValue("vmstat.cpu.id", "%", idle),
        MonitorValue("vmstat.cpu.wa", "%", wa),
        MonitorValue("vmstat.cpu.st", "%", st),
    ]


MPSTAT_COLUMNS = ("usr", "nice", "sys", "iowait", "irq", "soft", "steal", "guest", "idle")
_JIFFY_INDEX = {"usr": 0, "nice": 1, "sys": 2, "idle": 3, "iowait": 4, "irq": 5, "soft": 6, "steal": 7, "guest": 8}


def mpstat(snapshots: Sequence[Snapshot]) -> list[MonitorValue]:
    """mpstat's ``all`` row over the iteration, in % of the CPUs' time."""
    _require(snapshots, SOURCES["mpstat"])
    share = _cpu_share(_stat(snapshots[0].files["stat"])[0]["cpu"], _stat(snapshots[-1].files["stat"])[0]["cpu"])
    return [MonitorValue(f"mpstat.cpu.all.{name}", "%", share[_JIFFY_INDEX[name]]) for name in MPSTAT_COLUMNS]


def proc_vmstat(snapshots: Sequence[Snapshot]) -> list[MonitorValue]:
    """Each /proc/vmstat counter: its increase over the iteration, or for an ``nr_*`` gauge its mean."""
    _require(snapshots, SOURCES["proc-vmstat"])
    counters = [_pairs(s.files["vmstat"]) for s in snapshots]
    found = []
    for name in counters[0]:
        if name.startswith("nr_"):
            found.append(MonitorValue(f"proc-vmstat.{name}", "pages",
                                      sum(c.get(name, 0) for c in counters) / len(counters)))
        else:
            found.append(MonitorValue(f"proc-vmstat.{name}", "events", counters[-1].get(name, 0) - counters[0][name]))
    return found


def interrupts(snapshots: Sequence[Snapshot]) -> list[MonitorValue]:
    """Each interrupt line's count over the iteration (all CPUs)."""
    _require(snapshots, SOURCES["interrupts"])
    first, last = _interrupts(snapshots[0].files["interrupts"]), _interrupts(snapshots[-1].files["interrupts"])
    return [MonitorValue(f"interrupts.{name}", "interrupts", last.get(name, 0) - count)
            for name, count in first.items()]


READERS = {"vmstat": vmstat, "mpstat": mpstat, "proc-vmstat": proc_vmstat, "interrupts": interrupts}


def monitor_values(monitors: Sequence[str], snapshots: Sequence[Snapshot]) -> list[MonitorValue]:
    """Every metric of ``monitors`` for one iteration's snapshots (MonitorError if they cannot be read)."""
    return [value for monitor in monitors for value in READERS[monitor](snapshots)]


def is_monitor_metric(name: str) -> bool:
    """Whether ``name`` is a monitor's figure (``vmstat.system.cs``, ``proc-vmstat.pgfault`` ...)."""
    return name.split(".", 1)[0] in MONITORS
