"""``kbench crosscheck``: one quantity measured by two independent methods in one session.

- ``syscall.*``: the probe's per-call latency (rdtsc around a batch of calls, in user
  space) against the sys_enter -> sys_exit durations of the same syscall number of the
  probe's thread (kernel tracepoints: kbench.ko in a guest, tracefs here) — the seed
  libMicro check. A call spends time outside its two tracepoints (the entry and exit of
  the kernel, the probe's loop and timer), so both methods are also applied to the
  empty region: ``syscall.getppid`` with nothing added, the cheapest syscall. Its
  difference of medians is that outside time; the tracepoints' median plus it is their
  view of the call's latency, compared with the probe's. (The same difference relative
  to the kernel's part alone is reported too; it is not the verdict's, because the
  outside time moves from process to process by 50-190 ns on this machine, as much as a
  getppid's whole kernel part.) The same probe run untraced gives the tracepoints' own
  cost per call.
- ``kfunc.*``: kbench.ko's loop (cycles per call, less its empty timed region) against
  the function timed in place by a kretprobe while the loop runs (less the probe's
  effective overhead, measured on an empty function in the same boot). The loop also
  times its call wrapper, so the loop is expected a little above the function.
- ``command``: the command's CPU time per execution from the kernel's rusage (utime +
  stime, from wait4) against the on-CPU time of the execution's process tree from
  context switches (utilisation), split into time in traced kernel entries and the rest.

The same statistic on both sides. A probe sample is the mean of a batch of consecutive
calls, so the traced durations are grouped the same way (consecutive calls, the probe's
batch, aligned with its last samples) and each group's mean is one value; kbench.ko's
loop runs one call per sample, as the kretprobe logs one duration per call. Comparing
the median of batch means with the median of single calls would compare different
points of a skewed distribution (writev's calls alternate between a cheaper overwrite
and a dearer append; fib lookups vary with the address and TCG's interrupts make their
tail heavy).

Rounds: the whole procedure is repeated ``rounds`` times, the methods' runs
alternating, each run in a fresh process (or kbench.ko run). A process can land in a
slower mode of this machine for its whole life (page placement: getppid 164 or 216 ns
per process here), so a method's median is the median of its rounds' medians and a
correction the median of the rounds' corrections: fewer than half the rounds of each
side may be off without moving the verdict. Each round's own agreement is reported too.

Agreement: ``agreement_pct`` = 100 x (method 1 corrected / method 2 corrected - 1); the
verdict is *agree* when its size is within the tolerance.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbench.catalog.benchmarks import lookup
from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.kinds.registry import kind_of, measure
from kbench.trace.entries import syscall_names
from kbench.trace.log import FLAG_SWITCHED, KIND_SYSCALL, TraceLog
from kbench.trace.tracking import GUEST_LOG_ENTRIES, TrackedTarget, tracked_log, tracking_of

DEFAULT_TOLERANCE_PCT = 15.0
DEFAULT_ROUNDS = 5
REFERENCE = "syscall.getppid"
OUTSIDE_SPREAD = 1.5
"""A spread of the empty region's outside time over the rounds (max / min) from which the
report says that the processes ran in different speed modes."""
EMPTY_KFUNC = "kfunc.empty"
KFUNC_WARMUP = 50_000
# Calls a syscall crosscheck run makes at most (warm-up aside), and the batch it caps at.
TRACED_CALLS = 32_768
MAX_BATCH = 64
"""Calls before a kbench.ko loop's recorded samples (both the probed and the unprobed)."""
KFUNC_FUNCTIONS = {
    "fib4_lookup": "fib_table_lookup",
    "get_random_u32": "get_random_u32",
    "ktime_get": "ktime_get",
    "kmalloc": "__kmalloc",
}
"""The kernel function a kbench.ko benchmark's call spends its time in (--function overrides)."""


class CrosscheckError(ValueError):
    """The benchmark cannot be cross-checked (the message says why and what can)."""


@dataclass(frozen=True)
class Method:
    method: str
    role: str  # a short name: probe, tracepoints, loop, kretprobe, rusage, context_switches
    values: np.ndarray  # every round's values
    unit: str
    correction: float = 0.0  # subtracted from the median before comparing (median of the rounds')
    correction_why: str = ""
    round_medians: tuple[float, ...] = ()

    @property
    def median(self) -> float:
        """The median of the rounds' medians (a process-wide slow mode moves one round, not this)."""
        if self.round_medians:
            return float(np.median(self.round_medians))
        return float(np.median(self.values)) if self.values.size else float("nan")

    @property
    def p90(self) -> float:
        return float(np.percentile(self.values, 90)) if self.values.size else float("nan")

    @property
    def corrected(self) -> float:
        return self.median - self.correction

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "role": self.role, "median": self.median, "p90": self.p90,
                "n": int(self.values.size), "unit": self.unit, "correction": self.correction,
                "correction_why": self.correction_why, "corrected": self.corrected}


@dataclass(frozen=True)
class Round:
    """One repetition: each method's values and corrections from its own runs."""

    first: np.ndarray
    second: np.ndarray
    first_correction: float = 0.0
    second_correction: float = 0.0

    @property
    def agreement_pct(self) -> float:
        return _agreement(float(np.median(self.first)) - self.first_correction,
                          float(np.median(self.second)) - self.second_correction)


def _agreement(first: float, second: float) -> float:
    return 100.0 * (first / second - 1.0) if second > 0 else float("nan")


@dataclass(frozen=True)
class MethodSpec:
    method: str
    role: str
    unit: str
    correction_why: str = ""


@dataclass(frozen=True)
class Crosscheck:
    benchmark: str
    quantity: str
    source: str
    specs: tuple[MethodSpec, MethodSpec]
    rounds: tuple[Round, ...]
    tolerance_pct: float
    notes: list[str] = field(default_factory=list)
    tracing_overhead: float | None = None  # what the second method adds to each operation
    statistic: str = "median of the values"

    @property
    def methods(self) -> tuple[Method, Method]:
        first, second = self.specs
        return (
            Method(first.method, first.role, np.concatenate([r.first for r in self.rounds]), first.unit,
                   float(np.median([r.first_correction for r in self.rounds])), first.correction_why,
                   tuple(float(np.median(r.first)) for r in self.rounds)),
            Method(second.method, second.role, np.concatenate([r.second for r in self.rounds]), second.unit,
                   float(np.median([r.second_correction for r in self.rounds])), second.correction_why,
                   tuple(float(np.median(r.second)) for r in self.rounds)),
        )

    @property
    def ratio(self) -> float:
        first, second = self.methods
        return first.median / second.median if second.median else float("nan")

    @property
    def agreement_pct(self) -> float:
        first, second = self.methods
        return _agreement(first.corrected, second.corrected)

    @property
    def agrees(self) -> bool:
        return bool(abs(self.agreement_pct) <= self.tolerance_pct)

    @property
    def verdict(self) -> str:
        return "agree" if self.agrees else "disagree"

    def reason(self) -> str:
        first, second = self.methods
        if self.agrees and not (first.correction or second.correction):
            return f"the two methods agree within ±{self.tolerance_pct:g}%"
        if self.agrees:
            return (f"the two methods agree within ±{self.tolerance_pct:g}% once each is corrected by its own "
                    "measurement of the empty region")
        gap = first.corrected - second.corrected
        if gap > 0:
            return (f"{first.method} counts {gap:.0f} {first.unit} more per operation than {second.method} "
                    f"accounts for: work outside what {second.method} times (user-space work in the loop, a call "
                    "wrapper, a process it does not wait for), or disturbances that only the first samples")
        return (f"{second.method} sees {-gap:.0f} {first.unit} more per operation than {first.method}: the "
                "tracing's own cost inside the timed span (its probes run between its two timestamps), or "
                f"work {first.method} does not count")

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark, "quantity": self.quantity, "source": self.source,
            "methods": [m.to_json() for m in self.methods], "ratio": self.ratio,
            "agreement_pct": self.agreement_pct, "tolerance_pct": self.tolerance_pct, "verdict": self.verdict,
            "reason": self.reason(), "statistic": self.statistic,
            "rounds": [{"agreement_pct": r.agreement_pct, "n": [int(r.first.size), int(r.second.size)],
                        "corrections": [r.first_correction, r.second_correction]} for r in self.rounds],
            "rounds_agreeing": sum(abs(r.agreement_pct) <= self.tolerance_pct for r in self.rounds),
            "tracing_overhead": self.tracing_overhead, "notes": self.notes,
        }


Progress = Callable[[str], None]


def crosscheck(target: Any, benchmark: Benchmark, request: RunRequest, tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
               function: str | None = None, rounds: int = DEFAULT_ROUNDS,
               progress: Progress | None = None) -> Crosscheck:
    if rounds < 1:
        raise CrosscheckError(f"rounds must be at least 1, got {rounds}")
    say = progress or (lambda _text: None)
    kind = kind_of(benchmark)
    if kind.operation_syscall(benchmark) is not None:
        return syscall_crosscheck(target, benchmark, request, tolerance_pct, rounds, say)
    if kind.in_kernel:
        return kfunc_crosscheck(target, benchmark, request, tolerance_pct, function, rounds, say)
    if benchmark.name == "command":
        return command_crosscheck(target, benchmark, request, tolerance_pct, rounds, say)
    raise CrosscheckError(f"{benchmark.name} has no second method: crosscheck takes syscall.* benchmarks whose "
                          "operation is one system call, kfunc.* and command")


def group_means(values: np.ndarray, size: int) -> np.ndarray:
    """Means of consecutive groups of ``size`` values, the groups aligned with the end
    (the last samples of a run); a partial group at the start is left out."""
    size = max(int(size), 1)
    whole = values.size // size
    if whole == 0:
        return np.empty(0)
    tail = values[values.size - whole * size:].astype(np.float64)
    means: np.ndarray = tail.reshape(whole, size).mean(axis=1)
    return means


# -- syscall.* ------------------------------------------------------------------------


@dataclass(frozen=True)
class SyscallRun:
    """One tracked probe run: per sample, the probe's and the tracepoints' mean per call (ns)."""

    probe: np.ndarray
    traced: np.ndarray
    source: str
    calls: int
    measurement: Measurement

    @property
    def batch(self) -> int:
        return max(int(self.measurement.header.get("batch") or 1), 1)

    @property
    def outside(self) -> float:
        """Time per call outside sys_enter..sys_exit: the difference of the two medians."""
        return float(np.median(self.probe)) - float(np.median(self.traced))


def _sample_calls(log: TraceLog, nr: int | None) -> np.ndarray:
    """The sample loop's calls of syscall ``nr``, in order: the calls of the thread that made
    most of them, with their usual return value (the probe's set-up and output writes
    return other sizes)."""
    calls: np.ndarray = log.entries[(log.entries["kind"] == KIND_SYSCALL) & (log.entries["key"] == nr)]
    if calls.size == 0:
        return calls
    pids, counts = np.unique(calls["pid"], return_counts=True)
    calls = calls[calls["pid"] == pids[np.argmax(counts)]]
    returns, counts = np.unique(calls["data"], return_counts=True)
    calls = calls[calls["data"] == returns[np.argmax(counts)]]
    ordered: np.ndarray = calls[np.argsort(calls["start"], kind="stable")]
    return ordered


def _syscall_run(target: Any, benchmark: Benchmark, request: RunRequest) -> SyscallRun:
    measurement = measure(TrackedTarget(target, ("entries",), ("syscalls",)), benchmark, request)
    log = tracked_log(measurement.header, measurement.columns)
    if log is None:
        raise CrosscheckError(f"{benchmark.name}: the tracked run left no entries")
    nr = kind_of(benchmark).operation_syscall(benchmark)
    calls = _sample_calls(log, nr)
    if calls.size == 0:
        name = syscall_names().get(nr or -1, str(nr))
        raise CrosscheckError(f"{benchmark.name}: no {name} call was traced on the probe's CPU")
    probe = _per_call_ns(measurement)
    batch = max(int(measurement.header.get("batch") or 1), 1)
    traced = group_means(_to_ns(log, calls["cycles"]), batch)[-probe.size:]
    if traced.size < probe.size // 2:
        raise CrosscheckError(f"{benchmark.name}: only {calls.size} of the probe's {probe.size * batch} calls "
                              "were traced (entries lost: see the run's warnings)")
    source = str(measurement.header["tracking"]["source"])
    return SyscallRun(probe, traced, source, int(calls.size), measurement)


def _to_ns(log: TraceLog, ticks: np.ndarray) -> np.ndarray:
    values: np.ndarray = ticks.astype(np.float64) * (1e6 / log.tsc_khz)
    return values


def _per_call_ns(measurement: Measurement) -> np.ndarray:
    """The probe's per-call latency, its empty timed region (per call) taken off."""
    values = measurement.per_op("ns")
    batch = max(int(measurement.header.get("batch") or 1), 1)
    overhead = measurement.overhead_ns()["median"] / batch if measurement.header.get("overhead") else 0.0
    corrected: np.ndarray = values - overhead
    return corrected


def traced_batch(samples: int | None) -> int:
    """A batch that keeps every traced call of a run in the log: the probe's own choice
    (hundreds of calls per sample) would overflow kbench.ko's default log of 262,144
    entries, split over the CPUs, and a log that dropped calls cannot be lined up with
    the probe's samples."""
    return max(1, min(MAX_BATCH, TRACED_CALLS // max(samples or 1, 1)))


def syscall_crosscheck(target: Any, benchmark: Benchmark, request: RunRequest, tolerance_pct: float,
                       rounds: int, say: Progress) -> Crosscheck:
    cpu = request.cpu if request.cpu is not None else _last_cpu(target)
    batch = request.batch if request.batch is not None else traced_batch(request.samples)
    request = dataclasses.replace(request, cpu=cpu, batch=batch)
    reference_bench = lookup(REFERENCE)
    reference_request = RunRequest(benchmark=REFERENCE, samples=request.samples, cpu=cpu,
                                   warmup_samples=request.warmup_samples, batch=batch)
    done: list[Round] = []
    references: list[SyscallRun] = []
    runs: list[SyscallRun] = []
    for number in range(rounds):
        say(f"round {number + 1} of {rounds}: {REFERENCE} (the empty region), then {benchmark.name}, traced")
        reference = _syscall_run(target, reference_bench, reference_request)
        run = _syscall_run(target, benchmark, request)
        # Later rounds keep the first round's batches: the rounds then take the same statistic.
        reference_request = dataclasses.replace(reference_request, batch=reference.batch)
        request = dataclasses.replace(request, batch=run.batch)
        references.append(reference)
        runs.append(run)
        # The tracepoints see the call less the time outside them: that time, from the
        # empty region, completes their view of the call's latency.
        done.append(Round(run.probe, run.traced, 0.0, -reference.outside))
    say(f"{benchmark.name} untraced (the tracing's own cost)")
    untraced = measure(target, benchmark, request)
    probe = np.concatenate([run.probe for run in runs])
    traced_median, untraced_median = float(np.median(probe)), float(np.median(_per_call_ns(untraced)))
    overhead = traced_median - untraced_median
    name = syscall_names().get(kind_of(benchmark).operation_syscall(benchmark) or -1, "?")
    outside = [reference.outside for reference in references]
    traced = float(np.median([float(np.median(run.traced)) for run in runs]))
    inside = float(np.median([float(np.median(run.probe)) for run in runs])) - float(np.median(outside))
    spread = [] if min(outside) <= 0 or max(outside) < OUTSIDE_SPREAD * min(outside) else [
        f"the empty region's outside time varied {max(outside) / min(outside):.1f}x between rounds: processes "
        f"landed in different speed modes of this machine (under TCG they are about 2x apart), and a round "
        f"whose two processes differ in mode disagrees by about as much as that outside time is of the call; "
        f"read the rounds' own agreements before the verdict"]
    return Crosscheck(
        benchmark=benchmark.name, quantity=f"latency of one {name}() call", source=runs[0].source,
        specs=(
            MethodSpec("probe (rdtsc per call, user space)", "probe", "ns"),
            MethodSpec(f"tracepoints (sys_enter -> sys_exit, {runs[0].source})", "tracepoints", "ns",
                       f"plus the call's time outside sys_enter..sys_exit, measured on the empty region "
                       f"({REFERENCE}, both methods)"),
        ),
        rounds=tuple(done), tolerance_pct=tolerance_pct, tracing_overhead=overhead,
        statistic=f"per sample, the mean per call of the sample's batch ({request.batch} calls): "
                  "the probe's rdtsc pair, and the same calls' traced durations; each method's median is the "
                  "median of its rounds' medians",
        notes=[f"pinned to CPU {cpu}; the probe's empty timed region is taken off its values; {rounds} rounds, "
               "each method's runs alternating, a fresh process each",
               f"empty region: {REFERENCE}'s time outside its tracepoints per round "
               f"{', '.join(f'{value:.0f}' for value in outside)} ns",
               f"{sum(run.calls for run in runs)} {name} calls traced in all",
               f"in-kernel view: the probe less that outside time is {inside:.0f} ns per call, the tracepoints' "
               f"{traced:.0f} ns ({_agreement(inside, traced):+.1f}%); the verdict judges the whole call, because "
               "the outside time differs from process to process by more than the kernel's part of a getppid",
               f"tracing overhead: {overhead:+.0f} ns per call (the probe's median {traced_median:.0f} ns traced, "
               f"{untraced_median:.0f} ns in one more run untraced)", *spread],
    )


def _last_cpu(target: Any) -> int:
    import os

    cpus = getattr(target, "cpus", None)
    if isinstance(cpus, int):
        return cpus - 1
    return max(os.sched_getaffinity(0))


# -- kfunc.* ----------------------------------------------------------------------------


def kfunc_crosscheck(target: Any, benchmark: Benchmark, request: RunRequest, tolerance_pct: float,
                     function: str | None, rounds: int, say: Progress) -> Crosscheck:
    from kbench.kinds.trace.hosts import VmTraceHost
    from kbench.kinds.trace.session import check_functions
    from kbench.trace.kernel import KernelTraceLog

    name = function or KFUNC_FUNCTIONS.get(benchmark.workload)
    if name is None:
        raise CrosscheckError(f"which kernel function does {benchmark.name} time? give it with --function")
    host = VmTraceHost(target)
    check_functions(host, (name,))
    done: list[Round] = []
    probed_loops: list[float] = []
    # One call per loop sample, like the probe's one call per logged duration: the same
    # statistic (the median of single calls) on both sides. A median of batch means
    # lies nearer the mean of these heavy-tailed calls than a median of single ones.
    # Warm: under TCG the first tens of thousands of calls run slower (translation, the
    # soft TLB filling with the trie's pages): 2000-call runs scatter by 1.5x, runs past
    # 50000 warm-up calls agree within a few %.
    request = dataclasses.replace(request, batch=1, warmup_samples=max(request.warmup_samples or 0, KFUNC_WARMUP))
    empty = lookup(EMPTY_KFUNC)
    empty_request = RunRequest(benchmark=empty.name, samples=request.samples, batch=1,
                               warmup_samples=request.warmup_samples)
    for number in range(rounds):
        say(f"round {number + 1} of {rounds}: {benchmark.name} unprobed, with a kretprobe on {name}, unprobed "
            "again")
        harness = float(np.median(measure(target, empty, empty_request).per_op("cycles")))
        before = measure(target, benchmark, request)
        round_, probed_loop = _kfunc_round(host, benchmark, request, name)
        after = measure(target, benchmark, request)
        # A guest under TCG changes speed from one phase to the next: the loop is timed
        # on both sides of the probed run, each method's values within one round.
        loop = np.concatenate([before.per_op("cycles"), after.per_op("cycles")])
        done.append(dataclasses.replace(round_, first=loop, first_correction=harness))
        probed_loops.append(probed_loop)
    notes = []
    session = getattr(target, "session", None)
    if getattr(session, "accel", None) == "tcg":
        notes.append("under TCG a kretprobe's effective overhead, measured on an empty function, is not what it "
                     "adds to another function, and a call wrapper costs more: kfunc.fib4_lookup's loop came out "
                     "15-45% above fib_table_lookup in Debian 6.1 and 6.12 (docs/PERFORMANCE.md); judge with "
                     "--tolerance 50")
    loop_median = float(np.median(np.concatenate([r.first for r in done])))
    tsc_khz = KernelTraceLog(target.module.io).status().get("tsc_khz")
    probed = float(np.median(probed_loops))
    return Crosscheck(
        benchmark=benchmark.name, quantity=f"cycles of one {benchmark.workload} call", source="kbench.ko",
        specs=(
            MethodSpec("kbench.ko loop (cycles per call)", "loop", "cycles",
                       f"the harness's own cycles per call ({EMPTY_KFUNC} at batch 1, each round)"),
            MethodSpec(f"kretprobe on {name} (in place, while the loop runs)", "kretprobe", "cycles",
                       "the probe's effective overhead, measured on an empty function in this boot"),
        ),
        rounds=tuple(done), tolerance_pct=tolerance_pct, tracing_overhead=probed - loop_median,
        statistic="single calls: a loop sample of one call, and one probed call; each method's median is the "
                  "median of its rounds' medians",
        notes=[f"TSC {tsc_khz} kHz; {rounds} rounds, each: the empty harness, the loop unprobed, with the probe "
               f"(median {probed:.0f} cycles per call probed), unprobed again",
               "the loop also times the benchmark's call wrapper around the function", *notes],
    )


def _kfunc_round(host: Any, benchmark: Benchmark, request: RunRequest, name: str) -> tuple[Round, float]:
    """The probed run: (a round whose second method is the probe's durations, the loop's cycles
    per call while probed)."""
    from kbench.kinds.trace.plan import TracePlan
    from kbench.kinds.trace.session import trace_measurement
    from kbench.trace.log import KIND_FUNCTION
    from kbench.trace.selection import measured_entries

    batch = max(int(request.batch or 1), 1)
    traced = trace_measurement(host, TracePlan(functions=(name,), during=benchmark, during_request=request,
                                               log_size=GUEST_LOG_ENTRIES))
    log = TraceLog.from_columns(traced.columns, traced.header["trace"])
    entries = measured_entries(log).entries
    slot = next(slot for slot, fn in log.functions.items() if fn == name)
    calls = entries[(entries["kind"] == KIND_FUNCTION) & (entries["key"] == slot)]
    if calls.size == 0:
        raise CrosscheckError(f"{name} was not called while {benchmark.name} ran: give the function it times "
                              "with --function")
    groups = []
    for pid in np.unique(calls["pid"]):
        mine = calls[calls["pid"] == pid]
        mine = mine[np.argsort(mine["start"], kind="stable")]
        groups.append(group_means(mine["cycles"], batch))
    probe = traced.header["trace"].get("probe_overhead") or {}
    effective = float(probe.get("median_effective", 0.0))
    probed_loop = float(traced.header.get("workload", {}).get("median", float("nan")))
    return Round(np.empty(0), np.concatenate(groups), 0.0, effective), probed_loop


# -- command ------------------------------------------------------------------------------


def execution_trees(util: Any) -> dict[int, set[int]]:
    """The probe's children (one per execution) -> the threads of each one's process tree.

    The probe is the top of the benchmark's threads (its parent is not one of them); a
    thread belongs to the execution whose child it descends from, by fork parentage."""
    parent = {t.pid: t.ppid for t in util.threads}
    tops = {pid for pid in util.measured if parent.get(pid) not in util.measured}
    trees: dict[int, set[int]] = {}
    for pid in util.measured - tops:
        node, seen = pid, set()
        while node not in seen and parent.get(node, 0) not in tops and parent.get(node, 0):
            seen.add(node)
            node = parent[node]
        if parent.get(node) in tops:
            trees.setdefault(node, set()).add(pid)
    return trees


def command_crosscheck(target: Any, benchmark: Benchmark, request: RunRequest, tolerance_pct: float,
                       rounds: int, say: Progress) -> Crosscheck:
    # Both methods see the same executions: no warm-up, whose rusage the probe does not keep.
    # Pinned (the children inherit it), so only one CPU's entries are traced.
    cpu = request.cpu if request.cpu is not None else _last_cpu(target)
    request = dataclasses.replace(request, warmup_samples=0, warmup_duration_s=None, cpu=cpu)
    done: list[Round] = []
    in_kernel: list[float] = []
    slept: list[int] = []
    source = ""
    for number in range(rounds):
        say(f"round {number + 1} of {rounds}: {benchmark.name}, tracked")
        measurement = measure(TrackedTarget(target, ("entries", "utilisation"), ("syscalls", "irqs", "softirqs",
                                                                                 "vectors")), benchmark, request)
        columns = measurement.columns
        if "utime_ns" not in columns:
            raise CrosscheckError("the command run has no rusage columns")
        rusage = (columns["utime_ns"] + columns["stime_ns"]).astype(np.float64)
        _entries, util = tracking_of(measurement.header)
        if util is None or not util.measured:
            raise CrosscheckError("no thread of the command was seen by the context-switch accounting")
        source = util.source
        hz = util.tsc_khz * 1e3
        trees = execution_trees(util)
        if not trees:
            raise CrosscheckError("no execution of the command was seen by the context-switch accounting")
        cycles: dict[int, int] = {}
        for t in util.threads:
            for root, members in trees.items():
                if t.pid in members:
                    cycles[root] = cycles.get(root, 0) + t.cycles
        on_cpu = np.array(sorted(cycles[root] / hz * 1e9 for root in trees))
        log = tracked_log(measurement.header, measurement.columns)
        if log is not None:
            threads = [pid for tree in trees.values() for pid in tree]
            mine = log.entries[np.isin(log.entries["pid"], threads)]
            awake = mine[(mine["flags"] & FLAG_SWITCHED) == 0]
            in_kernel.append(float(awake["cycles"].sum()) / hz * 1e9 / len(trees))
            slept.append(int(mine.size - awake.size))
        done.append(Round(rusage, on_cpu))
    executions = sum(r.second.size for r in done)
    first_cpu = float(np.median(np.concatenate([r.second for r in done])))
    kernel = float(np.median(in_kernel)) if in_kernel else 0.0
    return Crosscheck(
        benchmark=benchmark.name, quantity="CPU time of one execution of the command", source=source,
        specs=(
            MethodSpec("rusage (utime + stime from wait4)", "rusage", "ns"),
            MethodSpec("context switches (on-CPU time of its process tree)", "context_switches", "ns"),
        ),
        rounds=tuple(done), tolerance_pct=tolerance_pct,
        statistic="per execution: the child's rusage, and the summed on-CPU time of the threads it and its "
                  "descendants ran; each method's median is the median of its rounds' medians",
        notes=[f"pinned to CPU {cpu}; {executions} executions traced in {rounds} rounds (no warm-up: both "
               "methods see the same executions)",
               f"of the on-CPU time (median {first_cpu:.0f} ns), {kernel:.0f} ns per execution was inside traced "
               f"kernel entries (syscalls that did not sleep, interrupts), the rest user time; "
               f"{sum(slept)} entries that slept left out",
               "rusage counts the child and the descendants it waited for; context switches count every "
               "descendant, waited for or not"],
    )
