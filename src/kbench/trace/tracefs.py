"""Kernel entries and utilisation of the running kernel, from tracefs (no module needed).

A tracefs instance of its own (``instances/kbench-<pid>``, so the global trace is left
alone) records raw_syscalls, irq, irq_vectors, exceptions and sched_switch events on the
measured CPUs with the ``x86-tsc`` clock, in a ring buffer that drops new events when
full (``overwrite`` off) and counts them. Afterwards the text trace is read once and
turned into what kbench.ko would have logged: one entry per kernel entry with its start
and its ticks (sys_enter paired with the same thread's sys_exit, an interrupt's entry
with its exit on the CPU), and per-CPU thread times from the context switches. Two
trace markers, with CLOCK_MONOTONIC in them, give the TSC's rate.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kbench.trace.entries import VECTOR_NAMES
from kbench.trace.kernel import TraceError
from kbench.trace.log import (
    ENTRY_DTYPE,
    FLAG_SWITCHED,
    FLAG_UNTIMED,
    KIND_FAULT,
    KIND_IRQ,
    KIND_SOFTIRQ,
    KIND_SYSCALL,
    KIND_VECTOR,
    TraceLog,
)
from kbench.trace.utilisation import CpuTime, ThreadTime, Utilisation

TRACEFS = Path("/sys/kernel/tracing")
CLOCK = "x86-tsc"
DEFAULT_BUFFER_KB = 32768
MOUNT_TIMEOUT_S = 30
"""Longest wait for ``mount -t tracefs``."""
MIN_CALIBRATION_S = 0.3
"""The start and end markers are at least this far apart (the TSC rate comes from them)."""
GROUP_EVENTS = {
    "syscalls": ["raw_syscalls/sys_enter", "raw_syscalls/sys_exit"],
    "irqs": ["irq/irq_handler_entry", "irq/irq_handler_exit"],
    "softirqs": ["irq/softirq_entry", "irq/softirq_exit"],
    "vectors": [f"irq_vectors/{name}_{end}" for name in VECTOR_NAMES for end in ("entry", "exit")],
    "faults": ["exceptions/page_fault_user", "exceptions/page_fault_kernel"],
}
GROUPS = tuple(GROUP_EVENTS)
UTILISATION_EVENTS = ["sched/sched_switch", "sched/sched_process_fork"]
LINE = re.compile(r"^\s*(?P<comm>.*)-(?P<pid>\d+)\s+(?:\(\s*[\d-]+\)\s+)?\[(?P<cpu>\d+)\]\s+\S+\s+"
                  r"(?P<ts>\d+): (?P<event>\w+): (?P<rest>.*)$")
SWITCH = re.compile(r"prev_comm=(?P<prev_comm>.*) prev_pid=(?P<prev>\d+) .* ==> next_comm=(?P<next_comm>.*) "
                    r"next_pid=(?P<next>\d+)")
FORK = re.compile(r"pid=(?P<parent>\d+) child_comm=.* child_pid=(?P<child>\d+)")
FIELD = re.compile(r"(\w+)=(\S+)")


def tracefs_root() -> Path:
    """tracefs, mounted at /sys/kernel/tracing if it is not yet; TraceError if it cannot be."""
    if (TRACEFS / "instances").is_dir():
        return TRACEFS
    debug = Path("/sys/kernel/debug/tracing")
    if (debug / "instances").is_dir():
        return debug
    if os.geteuid() != 0:
        raise TraceError("tracking kernel entries on this kernel needs tracefs, which only root can mount and use")
    import subprocess

    from kbench import children

    try:
        result = children.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, text=True,
                              timeout=MOUNT_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise TraceError(f"cannot mount tracefs at {TRACEFS}: mount took more than {MOUNT_TIMEOUT_S} s") from exc
    if result.returncode != 0 or not (TRACEFS / "instances").is_dir():
        raise TraceError(f"cannot mount tracefs at {TRACEFS}: {result.stderr.strip() or 'no instances directory'}")
    return TRACEFS


def cpumask_text(cpus: Iterable[int]) -> str:
    """tracing_cpumask's format: hex, comma-separated 32-bit groups, most significant first."""
    mask = 0
    for cpu in cpus:
        mask |= 1 << cpu
    groups = []
    while True:
        groups.append(f"{mask & 0xFFFFFFFF:08x}")
        mask >>= 32
        if not mask:
            break
    return ",".join(reversed(groups))


@dataclass
class TracefsRecording:
    """What one tracked span left: the entries as a log, the utilisation, what was lost."""

    log: TraceLog
    utilisation: Utilisation | None
    dropped: int
    syscalls_unpaired: int
    comms: dict[int, str] = field(default_factory=dict)


class TracefsTracker:
    """Entry tracking and utilisation on this kernel through a tracefs instance."""

    source = "tracefs"

    def __init__(self, groups: Iterable[str], utilisation: bool, cpus: Iterable[int] = (),
                 buffer_kb: int = DEFAULT_BUFFER_KB):
        self.groups = [g for g in GROUPS if g in set(groups)]
        self.utilisation = utilisation
        self.cpus = sorted(set(cpus)) or list(range(os.cpu_count() or 1))
        self.buffer_kb = buffer_kb
        self.instance: Path | None = None
        self.start_ns = 0
        self.missing: list[str] = []

    def _write(self, name: str, value: str) -> None:
        assert self.instance is not None
        try:
            (self.instance / name).write_text(value)
        except OSError as exc:
            raise TraceError(f"tracefs: cannot write {value.strip()!r} to {self.instance / name}: "
                             f"{os.strerror(exc.errno or errno.EIO)}") from exc

    def events(self) -> list[str]:
        found = [event for group in self.groups for event in GROUP_EVENTS[group]]
        return found + (UTILISATION_EVENTS if self.utilisation else [])

    def start(self) -> None:
        root = tracefs_root()
        clocks = (root / "trace_clock").read_text()
        if CLOCK not in clocks.replace("[", " ").replace("]", " ").split():
            raise TraceError(f"tracefs on this kernel has no {CLOCK} clock (it has: {clocks.strip()})")
        _remove_stale_instances(root)
        self.instance = root / "instances" / f"kbench-{os.getpid()}"
        try:
            self.instance.mkdir()
        except FileExistsError:
            pass
        except OSError as exc:
            raise TraceError(f"tracefs: cannot create the instance {self.instance}: {exc.strerror}") from exc
        try:
            self._write("tracing_on", "0")
            self._write("trace_clock", CLOCK)
            self._write("options/overwrite", "0")
            self._write("buffer_size_kb", str(self.buffer_kb))
            self._write("tracing_cpumask", cpumask_text(self.cpus))
            self._write("trace", "")
            for event in self.events():
                path = self.instance / "events" / event / "enable"
                if path.exists():
                    path.write_text("1")
                else:
                    self.missing.append(event)
            self._write("tracing_on", "1")
            self._mark("start")
        except BaseException:
            self.close()
            raise

    def _mark(self, which: str) -> None:
        """A marker with CLOCK_MONOTONIC, written from a traced CPU (others record nothing)."""
        assert self.instance is not None
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {self.cpus[-1]})
        try:
            now = time.monotonic_ns()
            (self.instance / "trace_marker").write_text(f"kbench-{which} {now}\n")
        except OSError as exc:
            # The ring buffer refuses a marker (EBADF) once it is full and not overwriting.
            full = exc.errno == errno.EBADF and self._dropped()
            raise TraceError(f"tracefs: the trace buffer ({self.buffer_kb} KiB per CPU) filled up and "
                             f"{self._dropped()} events were dropped: track fewer CPUs (--cpu) or a shorter run"
                             if full else f"tracefs: cannot write the {which} marker: "
                             f"{os.strerror(exc.errno or errno.EIO)}") from exc
        finally:
            os.sched_setaffinity(0, before)
        if which == "start":
            self.start_ns = now

    def stop(self) -> TracefsRecording:
        assert self.instance is not None, "start() first"
        try:
            wait = MIN_CALIBRATION_S - (time.monotonic_ns() - self.start_ns) / 1e9
            if wait > 0:
                time.sleep(wait)
            self._mark("end")
            self._write("tracing_on", "0")
            dropped = self._dropped()
            text = (self.instance / "trace").read_text(errors="replace")
        finally:
            self.close()
        return parse_trace(text, dropped, self.utilisation)

    def _dropped(self) -> int:
        assert self.instance is not None
        total = 0
        for cpu in self.cpus:
            stats = self.instance / "per_cpu" / f"cpu{cpu}" / "stats"
            if stats.exists():
                for line in stats.read_text().splitlines():
                    name, _, value = line.partition(":")
                    if name.strip() in ("overrun", "dropped events"):
                        total += int(value.strip() or 0)
        return total

    def close(self) -> None:
        if self.instance is None:
            return
        try:
            for event in self.events():
                path = self.instance / "events" / event / "enable"
                if path.exists():
                    path.write_text("0")
            self.instance.rmdir()
        except OSError:
            pass
        self.instance = None


def _remove_stale_instances(root: Path) -> None:
    """Instances of kbench processes that died before removing theirs."""
    for path in (root / "instances").glob("kbench-*"):
        pid = path.name.removeprefix("kbench-")
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                path.rmdir()


def parse_trace(text: str, dropped: int = 0, utilisation: bool = True) -> TracefsRecording:
    """The instance's text trace as a log of kernel entries (and the context switches' utilisation)."""
    rows: list[tuple[int, int, int, int, int, int, int, int]] = []  # start, ticks, key, data, pid, cpu, kind, flags
    syscalls: dict[int, tuple[int, int, int]] = {}  # pid -> (start, nr, switches)
    irq: dict[int, tuple[int, int]] = {}
    softirq: dict[int, tuple[int, int]] = {}
    vector: dict[int, tuple[int, int]] = {}
    switches: dict[int, int] = {}
    markers: dict[str, tuple[int, int]] = {}
    comms: dict[int, str] = {}
    parents: dict[int, int] = {}
    running: dict[int, tuple[int, int]] = {}  # cpu -> (since, pid)
    thread_cycles: dict[tuple[int, int], list[int]] = {}  # (cpu, pid) -> [cycles, switches]
    idle: dict[int, int] = {}
    last_pid: dict[int, int] = {}  # cpu -> the task of its last event
    unpaired = 0
    vector_keys = {name: i for i, name in enumerate(VECTOR_NAMES)}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = LINE.match(line)
        if m is None:
            continue
        event, rest = m["event"], m["rest"]
        pid, cpu, ts = int(m["pid"]), int(m["cpu"]), int(m["ts"])
        last_pid[cpu] = pid
        if event == "sys_enter":
            syscalls[pid] = (ts, int(rest.split()[1]), switches.get(pid, 0))
        elif event == "sys_exit":
            start = syscalls.pop(pid, None)
            if start is None:
                unpaired += 1
                continue
            ret = int(rest.rsplit("=", 1)[1])
            flags = FLAG_SWITCHED if switches.get(pid, 0) != start[2] else 0
            rows.append((start[0], ts - start[0], start[1], ret & 0xFFFFFFFF, pid, cpu, KIND_SYSCALL, flags))
        elif event == "irq_handler_entry":
            irq[cpu] = (ts, int(FIELD.search(rest)[2]))  # type: ignore[index]
        elif event == "irq_handler_exit":
            number = int(FIELD.search(rest)[2])  # type: ignore[index]
            began = irq.pop(cpu, None)
            if began and began[1] == number:
                rows.append((began[0], ts - began[0], number, 0, pid, cpu, KIND_IRQ, 0))
        elif event == "softirq_entry":
            softirq[cpu] = (ts, int(rest.split("=")[1].split()[0]))
        elif event == "softirq_exit":
            number = int(rest.split("=")[1].split()[0])
            began = softirq.pop(cpu, None)
            if began and began[1] == number:
                rows.append((began[0], ts - began[0], number, 0, pid, cpu, KIND_SOFTIRQ, 0))
        elif event.endswith("_entry") and event[:-6] in vector_keys:
            vector[cpu] = (ts, vector_keys[event[:-6]])
        elif event.endswith("_exit") and event[:-5] in vector_keys:
            began = vector.pop(cpu, None)
            key = vector_keys[event[:-5]]
            if began and began[1] == key:
                number = int(rest.split("=")[1])
                rows.append((began[0], ts - began[0], key, number, pid, cpu, KIND_VECTOR, 0))
        elif event in ("page_fault_user", "page_fault_kernel"):
            code = int(dict(FIELD.findall(rest)).get("error_code", "0"), 16)
            rows.append((ts, 0, 0 if event == "page_fault_user" else 1, code, pid, cpu, KIND_FAULT, FLAG_UNTIMED))
        elif event == "sched_switch":
            s = SWITCH.search(rest)
            if s is None:
                continue
            prev, nxt = int(s["prev"]), int(s["next"])
            if "end" in markers:
                continue
            switches[prev] = switches.get(prev, 0) + 1
            comms[prev] = s["prev_comm"]
            comms[nxt] = s["next_comm"]
            # Only the span between the two markers is accounted.
            if "start" in markers and "end" not in markers:
                since = max(running.get(cpu, (markers["start"][0], prev))[0], markers["start"][0])
                _charge(thread_cycles, idle, cpu, prev, ts - since, True)
            running[cpu] = (ts, nxt)
        elif event == "sched_process_fork":
            f = FORK.search(rest)
            if f is not None:
                parents[int(f["child"])] = int(f["parent"])
        elif event == "tracing_mark_write":
            word, _, value = rest.strip().partition(" ")
            if word in ("kbench-start", "kbench-end") and value.strip().isdigit():
                markers[word.removeprefix("kbench-")] = (ts, int(value))
    if "start" not in markers or "end" not in markers:
        raise TraceError("the tracefs trace lacks kbench's start or end marker (the buffer filled up before "
                         "the end marker: give a larger buffer)")
    (tsc0, ns0), (tsc1, ns1) = markers["start"], markers["end"]
    tsc_khz = round((tsc1 - tsc0) / ((ns1 - ns0) / 1e6)) if ns1 > ns0 else 0
    entries = np.array(rows, dtype=[(name, ENTRY_DTYPE[name]) for name in
                                    ("start", "cycles", "key", "data", "pid", "cpu", "kind", "flags")])
    log_entries = np.zeros(entries.size, dtype=ENTRY_DTYPE)
    for name in entries.dtype.names or ():
        log_entries[name] = entries[name]
    status = {"source": "tracefs", "clock": CLOCK, "overflow": str(dropped), "entries": str(entries.size),
              "syscalls_unpaired": str(unpaired)}
    log = TraceLog(log_entries, tsc_khz, status=status)
    util = None
    if utilisation:
        for cpu, pid in last_pid.items():
            # A CPU that never switched ran one task from marker to marker.
            since, pid = running.get(cpu, (tsc0, pid))
            _charge(thread_cycles, idle, cpu, pid, tsc1 - max(since, tsc0), False)
        cpus = sorted({cpu for cpu, _ in thread_cycles} | set(idle))
        util = Utilisation(
            "tracefs", tsc_khz,
            [CpuTime(cpu, tsc0, tsc1, idle.get(cpu, 0)) for cpu in cpus],
            [ThreadTime(cpu, pid, pid, parents.get(pid, 0), comms.get(pid, ""), cycles, count)
             for (cpu, pid), (cycles, count) in sorted(thread_cycles.items())],
            notes=["tgid is the thread id and ppid the thread that forked it (from sched_process_fork)"],
        )
    return TracefsRecording(log, util, dropped, unpaired, comms)


def _charge(threads: dict[tuple[int, int], list[int]], idle: dict[int, int], cpu: int, pid: int, ticks: int,
            out: bool) -> None:
    if pid == 0:
        idle[cpu] = idle.get(cpu, 0) + ticks
        return
    slot = threads.setdefault((cpu, pid), [0, 0])
    slot[0] += ticks
    slot[1] += int(out)
