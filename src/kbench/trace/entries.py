"""Kernel entries of a run: what entered the kernel on the measured CPUs, how often, for how long.

The entries are log entries of the kinds in ``log.ENTRY_KINDS`` — from kbench.ko
(kmod/core/entries.c) or rebuilt from tracefs events (``trace.tracefs``); either way
``cycles`` are ticks of ``log.tsc_khz``. The summary counts them and sums their time per
kind and per syscall / irq / vector, relates them to the benchmark's operations, and
names what landed inside the timed region that should not have (interrupts, faults,
other syscalls).

The timed region: a kbench.ko run's recorded windows (``selection``); a probe run of a
system call, the span from the first to the last call of that syscall by the thread that
made most of them (its operations are those calls); otherwise the whole tracked span.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kbench.trace.log import (
    ENTRY_KINDS,
    FLAG_UNTIMED,
    KIND_FAULT,
    KIND_IRQ,
    KIND_NAMES,
    KIND_SOFTIRQ,
    KIND_SYSCALL,
    KIND_VECTOR,
    TraceLog,
)
from kbench.trace.selection import last_run_windows

SOFTIRQ_NAMES = ("HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU")
VECTOR_NAMES = ("local_timer", "reschedule", "call_function", "call_function_single", "irq_work", "x86_platform_ipi")
"""kbench.ko's vector keys (the order of kbench_vector_hooks in kmod/core/entries.c)."""
FAULT_NAMES = ("user", "kernel")
INTERRUPT_KINDS = (KIND_IRQ, KIND_SOFTIRQ, KIND_VECTOR)
TOP_KEYS = 12
"""Rows of the per-syscall/irq table in reports (all are in the JSON)."""


@functools.cache
def syscall_names() -> dict[int, str]:
    """x86-64 syscall number -> name (from the kernel's unistd_64.h, shipped as data)."""
    table = Path(__file__).with_name("data") / "syscalls_x86_64.txt"
    names = {}
    for line in table.read_text().splitlines():
        number, _, name = line.partition(" ")
        names[int(number)] = name
    return names


def syscall_number(name: str) -> int | None:
    for number, known in syscall_names().items():
        if known == name:
            return number
    return None


def parse_proc_interrupts(text: str) -> dict[int, str]:
    """irq -> the names of its handlers, from /proc/interrupts (numbered lines only)."""
    names = {}
    lines = text.splitlines()
    cpus = len(lines[0].split()) if lines else 0
    for line in lines[1:]:
        head, _, rest = line.partition(":")
        if not head.strip().isdigit():
            continue
        fields = rest.split()
        # counts per CPU, the chip, the hwirq and trigger, then the handlers
        names[int(head)] = fields[-1] if len(fields) > cpus else ""
    return names


def entry_label(kind: int, key: int, irq_names: dict[int, str]) -> str:
    """What an entry is called in reports: ``writev``, ``irq 11 (virtio0)``, ``softirq TIMER``, …"""
    if kind == KIND_SYSCALL:
        return syscall_names().get(key, f"syscall {key}")
    if kind == KIND_IRQ:
        name = irq_names.get(key)
        return f"irq {key} ({name})" if name else f"irq {key}"
    if kind == KIND_SOFTIRQ:
        return f"softirq {SOFTIRQ_NAMES[key]}" if key < len(SOFTIRQ_NAMES) else f"softirq {key}"
    if kind == KIND_VECTOR:
        return VECTOR_NAMES[key] if key < len(VECTOR_NAMES) else f"vector {key}"
    if kind == KIND_FAULT:
        return f"page fault ({FAULT_NAMES[key]})" if key < len(FAULT_NAMES) else f"page fault {key}"
    return f"{KIND_NAMES.get(kind, kind)} {key}"


@dataclass(frozen=True)
class EntryRow:
    """Entries of one kind (``key`` None) or one (kind, key): count and time in ns."""

    kind: str
    key: int | None
    label: str
    count: int
    total_ns: float | None  # None: untimed (page faults)
    median_ns: float | None
    max_ns: float | None


@dataclass(frozen=True)
class EntrySummary:
    """The kernel entries of one run, as stored with it (``to_json``) and reported."""

    source: str
    cpus: list[int]
    span_ns: float  # the tracked span
    region: str  # what the timed region is
    region_ns: float
    ops: int | None
    op: str | None  # the operation the per-op figures count (a syscall name, "call")
    kinds: list[EntryRow]
    keys: list[EntryRow]
    per_op: dict[str, float] = field(default_factory=dict)  # kind -> entries per operation
    in_region: dict[str, int] = field(default_factory=dict)  # unexpected entries in the timed region, by label
    lost: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EntrySummary:
        rows = {name: [EntryRow(**row) for row in data.get(name, [])] for name in ("kinds", "keys")}
        return cls(**{**data, **rows})


@dataclass(frozen=True)
class EntryContext:
    """What the summary needs to know about the run besides the log."""

    benchmark: str
    op_syscall: int | None = None  # a probe run whose operation is this syscall
    batch: int = 1  # kbench.ko runs: calls per sample
    threads: frozenset[int] = frozenset()  # the benchmark's threads, when known
    cpus: tuple[int, ...] = ()  # the measured CPUs (empty: every CPU in the log)
    irq_names: dict[int, str] = field(default_factory=dict)
    source: str = "kbench.ko"
    lost: dict[str, int] = field(default_factory=dict)


def _ns(log: TraceLog, ticks: np.ndarray) -> np.ndarray:
    return ticks.astype(np.float64) * (1e6 / log.tsc_khz) if log.tsc_khz else ticks.astype(np.float64)


def _row(log: TraceLog, kind: int, key: int | None, rows: np.ndarray, label: str) -> EntryRow:
    timed = rows[(rows["flags"] & FLAG_UNTIMED) == 0]
    ns = _ns(log, timed["cycles"])
    return EntryRow(
        kind=KIND_NAMES[kind], key=key, label=label, count=int(rows.size),
        total_ns=float(ns.sum()) if timed.size else None,
        median_ns=float(np.median(ns)) if timed.size else None,
        max_ns=float(ns.max()) if timed.size else None,
    )


def entries_of(log: TraceLog, cpus: tuple[int, ...] = ()) -> np.ndarray:
    """The log's kernel entries (on ``cpus``, if given), in start order."""
    rows = log.entries[np.isin(log.entries["kind"], ENTRY_KINDS)]
    if cpus:
        rows = rows[np.isin(rows["cpu"], cpus)]
    ordered: np.ndarray = rows[np.argsort(rows["start"], kind="stable")]
    return ordered


def _kind_keys(rows: np.ndarray) -> list[tuple[int, int]]:
    """The distinct (kind, key) pairs of ``rows``, sorted."""
    pairs = np.unique(rows["kind"].astype(np.uint64) << np.uint64(32) | rows["key"].astype(np.uint64))
    return [(int(pair >> 32), int(pair & 0xFFFFFFFF)) for pair in pairs]


def _inside(rows: np.ndarray, low: int, high: int) -> np.ndarray:
    ends = rows["start"] + rows["cycles"]
    mask: np.ndarray = (rows["start"] >= low) & (ends <= high)
    return mask


def summarize_entries(log: TraceLog, context: EntryContext) -> EntrySummary:
    rows = entries_of(log, context.cpus)
    span = int(rows["start"].max() + rows["cycles"].max() - rows["start"].min()) if rows.size else 0
    kinds = [_row(log, kind, None, rows[rows["kind"] == kind], KIND_NAMES[kind])
             for kind in ENTRY_KINDS if np.any(rows["kind"] == kind)]
    pairs = _kind_keys(rows)
    keys = [_row(log, kind, key, rows[(rows["kind"] == kind) & (rows["key"] == key)],
                 entry_label(kind, key, context.irq_names)) for kind, key in pairs]
    keys.sort(key=lambda row: (-(row.total_ns or 0.0), -row.count))

    region, region_ticks, ops, op, inside, expected = _timed_region(log, rows, context)
    per_op: dict[str, float] = {}
    in_region: dict[str, int] = {}
    if ops:
        for kind in ENTRY_KINDS:
            per_op[KIND_NAMES[kind]] = float(np.count_nonzero(inside["kind"] == kind)) / ops
        per_op["all"] = float(inside.size) / ops
    unexpected = inside[~expected]
    for kind, key in _kind_keys(unexpected):
        count = int(np.count_nonzero((unexpected["kind"] == kind) & (unexpected["key"] == key)))
        in_region[entry_label(kind, key, context.irq_names)] = count
    lost = {**context.lost, "overflow": log.overflow}
    where = (f"in the timed region of {context.benchmark}" if op == "call" else
             f"between the first and the last {op} of {context.benchmark}'s thread" if op else
             f"while {context.benchmark} ran")
    warnings = _warnings(where, unexpected, in_region, ops, lost)
    return EntrySummary(
        source=context.source, cpus=sorted({int(c) for c in rows["cpu"]}), span_ns=float(_ns(log, np.array([span]))[0]),
        region=region, region_ns=float(_ns(log, np.array([region_ticks]))[0]), ops=ops, op=op,
        kinds=kinds, keys=keys, per_op=per_op, in_region=in_region, lost=lost, warnings=warnings,
    )


def _timed_region(
    log: TraceLog, rows: np.ndarray, context: EntryContext
) -> tuple[str, int, int | None, str | None, np.ndarray, np.ndarray]:
    """(what, ticks, operations, op name, entries inside, which of them are expected)."""
    windows = last_run_windows(log)
    if windows.size:
        inside = np.zeros(rows.size, dtype=bool)
        for window in windows:
            inside |= _inside(rows, int(window["start"]), int(window["start"] + window["cycles"])) & (
                rows["cpu"] == window["cpu"])
        ops = int(windows["data"].sum()) * max(context.batch, 1)
        chosen = rows[inside]
        # A kbench.ko loop makes no syscall and takes no fault: every entry is unexpected.
        return ("the recorded loop of each worker", int(windows["cycles"].sum()), ops, "call", chosen,
                np.zeros(chosen.size, dtype=bool))
    if context.op_syscall is not None:
        calls = rows[(rows["kind"] == KIND_SYSCALL) & (rows["key"] == context.op_syscall)]
        if context.threads:
            calls = calls[np.isin(calls["pid"], list(context.threads))]
        if calls.size:
            pids, counts = np.unique(calls["pid"], return_counts=True)
            thread = int(pids[np.argmax(counts)])
            calls = calls[calls["pid"] == thread]
            low, high = int(calls["start"].min()), int((calls["start"] + calls["cycles"]).max())
            cpus = np.unique(calls["cpu"])
            mask = _inside(rows, low, high) & np.isin(rows["cpu"], cpus)
            # Entries of other tasks on those CPUs landed there only by preempting it.
            mask &= (rows["pid"] == thread) | (rows["kind"] != KIND_SYSCALL)
            chosen = rows[mask]
            expected = (chosen["kind"] == KIND_SYSCALL) & (chosen["key"] == context.op_syscall)
            name = syscall_names().get(context.op_syscall, str(context.op_syscall))
            return (f"thread {thread}'s {name} calls, first to last", high - low,
                    int(np.count_nonzero(expected)), name, chosen, expected)
    span = int(rows["start"].max() + rows["cycles"].max() - rows["start"].min()) if rows.size else 0
    return ("the whole tracked span", span, None, None, rows, np.ones(rows.size, dtype=bool))


def _warnings(
    where: str, unexpected: np.ndarray, in_region: dict[str, int], ops: int | None,
    lost: dict[str, int],
) -> list[str]:
    found = []
    interrupts = int(np.count_nonzero(np.isin(unexpected["kind"], INTERRUPT_KINDS)))
    if interrupts:
        names = [f"{label} {count}" for label, count in in_region.items()
                 if not label.startswith(("page fault",)) and label not in syscall_names().values()]
        rate = f", {interrupts / ops:.2g} per operation" if ops else ""
        found.append(f"{interrupts} interrupts landed {where} "
                     f"({', '.join(names[:6])}){rate}: the samples holding them include the handlers' time")
    faults = int(np.count_nonzero(unexpected["kind"] == KIND_FAULT))
    if faults:
        found.append(f"{faults} page faults {where}")
    others = unexpected[unexpected["kind"] == KIND_SYSCALL]
    if others.size:
        top = sorted(((count, label) for label, count in in_region.items()
                      if label in syscall_names().values() or label.startswith("syscall ")), reverse=True)
        listed = ", ".join(f"{label} {count}" for count, label in top[:6])
        found.append(f"{others.size} other system calls {where} ({listed})")
    if lost.get("overflow"):
        found.append(f"entry tracking: {lost['overflow']} entries did not fit in the log and were counted, not "
                     "stored: counts are low")
    if lost.get("dropped"):
        found.append(f"entry tracking: tracefs dropped {lost['dropped']} events (ring buffer full): counts are low")
    return found
