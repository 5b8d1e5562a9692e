"""``kbench crosscheck``: one quantity measured by two independent methods in one session.

- ``syscall.*``: the probe's per-call latency (rdtsc around a batch of calls, in user
  space) against the sys_enter -> sys_exit durations of the same syscall number of the
  probe's thread (kernel tracepoints: kbench.ko in a guest, tracefs here) — the seed
  libMicro check. A call spends time outside its two tracepoints (the entry and exit of
  the kernel, the probe's loop and timer), so both methods are first applied, in the same
  session, to the empty region: ``syscall.getppid`` with nothing added, the cheapest
  syscall. Its difference of medians is that outside time; the probe's median less it is
  compared with the tracepoints' median. The same probe run untraced gives the
  tracepoints' own cost per call.
- ``kfunc.*``: kbench.ko's loop (cycles per call, less its empty timed region) against
  the function timed in place by a kretprobe while the loop runs (less the probe's
  effective overhead, measured on an empty function in the same boot). The loop also
  times its call wrapper, so the loop is expected a little above the function.
- ``command``: the command's CPU time per execution from the kernel's rusage (utime +
  stime) against its process tree's on-CPU time from context switches (utilisation),
  split into time in traced kernel entries and the rest (user).

Agreement: ``agreement_pct`` = 100 x (method 1 corrected / method 2 corrected - 1); the
verdict is *agree* when its size is within the tolerance.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbench.catalog.benchmarks import Benchmark, lookup
from kbench.engine.measurement import Measurement
from kbench.engine.request import RunRequest
from kbench.trace.entries import syscall_names
from kbench.trace.log import KIND_SYSCALL, TraceLog
from kbench.trace.tracking import TrackedTarget, op_syscall, tracked_log, tracking_of

DEFAULT_TOLERANCE_PCT = 15.0
REFERENCE = "syscall.getppid"
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
    values: np.ndarray
    unit: str
    correction: float = 0.0  # subtracted from the median before comparing
    correction_why: str = ""

    @property
    def median(self) -> float:
        return float(np.median(self.values)) if self.values.size else float("nan")

    @property
    def p90(self) -> float:
        return float(np.percentile(self.values, 90)) if self.values.size else float("nan")

    @property
    def corrected(self) -> float:
        return self.median - self.correction

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "median": self.median, "p90": self.p90, "n": int(self.values.size),
                "unit": self.unit, "correction": self.correction, "correction_why": self.correction_why,
                "corrected": self.corrected}


@dataclass(frozen=True)
class Crosscheck:
    benchmark: str
    quantity: str
    source: str
    methods: tuple[Method, Method]
    tolerance_pct: float
    notes: list[str] = field(default_factory=list)
    tracing_overhead: float | None = None  # what the second method adds to each operation

    @property
    def ratio(self) -> float:
        first, second = self.methods
        return first.median / second.median if second.median else float("nan")

    @property
    def agreement_pct(self) -> float:
        first, second = self.methods
        return 100.0 * (first.corrected / second.corrected - 1.0) if second.corrected > 0 else float("nan")

    @property
    def agrees(self) -> bool:
        return bool(abs(self.agreement_pct) <= self.tolerance_pct)

    @property
    def verdict(self) -> str:
        return "agree" if self.agrees else "disagree"

    def reason(self) -> str:
        first, second = self.methods
        if self.agrees:
            return (f"the two methods agree within ±{self.tolerance_pct:g}% once each is corrected by its own "
                    "measurement of the empty region")
        gap = first.corrected - second.corrected
        if gap > 0:
            return (f"{first.method} counts {gap:.0f} {first.unit} more per operation than {second.method} sees, "
                    f"beyond the empty region's {first.correction:.0f}: work outside what {second.method} times "
                    "(user-space work in the loop, a call wrapper), or disturbances that only it samples")
        return (f"{second.method} sees {-gap:.0f} {first.unit} more per operation than {first.method}: the "
                "tracing's own cost inside the timed span (its probes run between its two timestamps), or "
                f"calls {first.method} does not time")

    def to_json(self) -> dict[str, Any]:
        return {
            "benchmark": self.benchmark, "quantity": self.quantity, "source": self.source,
            "methods": [m.to_json() for m in self.methods], "ratio": self.ratio,
            "agreement_pct": self.agreement_pct, "tolerance_pct": self.tolerance_pct, "verdict": self.verdict,
            "reason": self.reason(), "tracing_overhead": self.tracing_overhead, "notes": self.notes,
        }


def crosscheck(target: Any, benchmark: Benchmark, request: RunRequest, tolerance_pct: float = DEFAULT_TOLERANCE_PCT,
               function: str | None = None) -> Crosscheck:
    if benchmark.kind == "probe" and op_syscall(benchmark) is not None:
        return syscall_crosscheck(target, benchmark, request, tolerance_pct)
    if benchmark.kind == "kfunc":
        return kfunc_crosscheck(target, benchmark, request, tolerance_pct, function)
    if benchmark.name == "command":
        return command_crosscheck(target, benchmark, request, tolerance_pct)
    raise CrosscheckError(f"{benchmark.name} has no second method: crosscheck takes syscall.* benchmarks whose "
                          "operation is one system call, kfunc.* and command")


# -- syscall.* ------------------------------------------------------------------------


def _traced_calls(target: Any, benchmark: Benchmark, request: RunRequest) -> tuple[Measurement, np.ndarray, str]:
    """One tracked probe run: the measurement and the op syscall's durations (ns) on its thread."""
    measurement = TrackedTarget(target, ("entries",), ("syscalls",)).measure(benchmark, request)
    log = tracked_log(measurement.header, measurement.columns)
    if log is None:
        raise CrosscheckError(f"{benchmark.name}: the tracked run left no entries")
    nr = op_syscall(benchmark)
    calls = log.entries[(log.entries["kind"] == KIND_SYSCALL) & (log.entries["key"] == nr)]
    if calls.size == 0:
        name = syscall_names().get(nr or -1, str(nr))
        raise CrosscheckError(f"{benchmark.name}: no {name} call was traced on the probe's CPU")
    pids, counts = np.unique(calls["pid"], return_counts=True)
    calls = calls[calls["pid"] == pids[np.argmax(counts)]]
    source = str(measurement.header["tracking"]["source"])
    return measurement, _to_ns(log, calls["cycles"]), source


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


def syscall_crosscheck(target: Any, benchmark: Benchmark, request: RunRequest, tolerance_pct: float) -> Crosscheck:
    cpu = request.cpu if request.cpu is not None else _last_cpu(target)
    request = dataclasses.replace(request, cpu=cpu)
    reference_bench = lookup(REFERENCE)
    reference_request = RunRequest(benchmark=REFERENCE, samples=request.samples, cpu=cpu)
    ref_run, ref_calls, source = _traced_calls(target, reference_bench, reference_request)
    offset = float(np.median(_per_call_ns(ref_run))) - float(np.median(ref_calls))
    run, calls, _ = _traced_calls(target, benchmark, request)
    untraced = target.measure(benchmark, request)
    probe = _per_call_ns(run)
    overhead = float(np.median(probe)) - float(np.median(_per_call_ns(untraced)))
    name = syscall_names().get(op_syscall(benchmark) or -1, "?")
    return Crosscheck(
        benchmark=benchmark.name, quantity=f"latency of one {name}() call", source=source,
        methods=(
            Method("probe (rdtsc per call, user space)", probe, "ns", offset,
                   f"time outside sys_enter..sys_exit, measured on the empty region ({REFERENCE}, both methods)"),
            Method(f"tracepoints (sys_enter -> sys_exit, {source})", calls, "ns"),
        ),
        tolerance_pct=tolerance_pct, tracing_overhead=overhead,
        notes=[f"pinned to CPU {cpu}; the probe's empty timed region is taken off its values",
               f"empty region: {REFERENCE} probe median {float(np.median(_per_call_ns(ref_run))):.0f} ns, "
               f"tracepoints median {float(np.median(ref_calls)):.0f} ns",
               f"tracing overhead: the same probe run untraced is {overhead:.0f} ns per call faster"],
    )


def _last_cpu(target: Any) -> int:
    import os

    cpus = getattr(target, "cpus", None)
    if isinstance(cpus, int):
        return cpus - 1
    return max(os.sched_getaffinity(0))


# -- kfunc.* ----------------------------------------------------------------------------


def kfunc_crosscheck(target: Any, benchmark: Benchmark, request: RunRequest, tolerance_pct: float,
                     function: str | None) -> Crosscheck:
    from kbench.trace.hosts import VmTraceHost
    from kbench.trace.kernel import KernelTraceLog
    from kbench.trace.log import KIND_FUNCTION
    from kbench.trace.plan import TracePlan
    from kbench.trace.selection import measured_entries
    from kbench.trace.session import check_functions, trace_measurement

    name = function or KFUNC_FUNCTIONS.get(benchmark.workload)
    if name is None:
        raise CrosscheckError(f"which kernel function does {benchmark.name} time? give it with --function")
    host = VmTraceHost(target)
    check_functions(host, (name,))
    unprobed = target.measure(benchmark, request)
    batch = max(int(unprobed.header.get("batch") or 1), 1)
    fixed = dataclasses.replace(request, batch=batch)
    traced = trace_measurement(host, TracePlan(functions=(name,), during=benchmark, during_request=fixed))
    log = TraceLog.from_columns(traced.columns, traced.header["trace"])
    entries = measured_entries(log).entries
    slot = next(slot for slot, fn in log.functions.items() if fn == name)
    durations = entries[(entries["kind"] == KIND_FUNCTION) & (entries["key"] == slot)]["cycles"].astype(np.float64)
    if durations.size == 0:
        raise CrosscheckError(f"{name} was not called while {benchmark.name} ran: give the function it times "
                              "with --function")
    loop = unprobed.per_op("cycles")
    empty = float(unprobed.header["overhead"]["median_ticks"]) / batch if unprobed.header.get("overhead") else 0.0
    probe = traced.header["trace"].get("probe_overhead") or {}
    effective = float(probe.get("median_effective", 0.0))
    workload = traced.header.get("workload", {})
    probed_loop = float(workload.get("median", float("nan")))
    tsc_khz = KernelTraceLog(target.module.io).status().get("tsc_khz")
    return Crosscheck(
        benchmark=benchmark.name, quantity=f"cycles of one {benchmark.workload} call", source="kbench.ko",
        methods=(
            Method("kbench.ko loop (cycles per call)", loop, "cycles", empty,
                   f"the loop's empty timed region per call (batch {batch})"),
            Method(f"kretprobe on {name} (in place, while the loop runs)", durations, "cycles", effective,
                   "the probe's effective overhead, measured on an empty function in this boot"),
        ),
        tolerance_pct=tolerance_pct, tracing_overhead=probed_loop - float(np.median(loop)),
        notes=[f"TSC {tsc_khz} kHz; loop run unprobed, then again with the probe (median {probed_loop:.0f} "
               "cycles per call probed)",
               "the loop also times the benchmark's call wrapper around the function"],
    )


# -- command ------------------------------------------------------------------------------


def command_crosscheck(target: Any, benchmark: Benchmark, request: RunRequest, tolerance_pct: float) -> Crosscheck:
    measurement = TrackedTarget(target, ("entries", "utilisation"), ("syscalls", "faults", "irqs", "softirqs",
                                                                    "vectors")).measure(benchmark, request)
    columns = measurement.columns
    if "utime_ns" not in columns:
        raise CrosscheckError("the command run has no rusage columns")
    rusage = (columns["utime_ns"] + columns["stime_ns"]).astype(np.float64)
    executions = measurement.n + int((measurement.header.get("warmup") or {}).get("samples") or 0)
    _entries, util = tracking_of(measurement.header)
    if util is None or not util.measured:
        raise CrosscheckError("no thread of the command was seen by the context-switch accounting")
    hz = util.tsc_khz * 1e3
    probe_tids = {t.pid for t in util.threads if t.comm == "kbench-probe"}
    children = {t.pid for t in util.threads if t.pid in util.measured and t.pid not in probe_tids}
    on_cpu = sum(t.cycles for t in util.threads if t.pid in children) / hz * 1e9
    log = tracked_log(measurement.header, measurement.columns)
    in_kernel = 0.0
    if log is not None:
        mine = log.entries[np.isin(log.entries["pid"], list(children))]
        in_kernel = float(mine["cycles"].sum()) / hz * 1e9
    per_execution = np.array([on_cpu / max(executions, 1)])
    return Crosscheck(
        benchmark=benchmark.name, quantity="CPU time of one execution of the command", source=util.source,
        methods=(
            Method("rusage (utime + stime of the child)", rusage, "ns"),
            Method("context switches (on-CPU time of its process tree)", per_execution, "ns"),
        ),
        tolerance_pct=tolerance_pct,
        notes=[f"{executions} executions (warm-up included) traced; of the on-CPU time "
               f"{in_kernel / max(executions, 1):.0f} ns per execution was inside traced kernel entries "
               f"(syscalls, interrupts), {max(on_cpu - in_kernel, 0) / max(executions, 1):.0f} ns the rest (user)",
               "rusage counts the child from exec to exit; the tree's on-CPU time also counts the child's time "
               "between fork and exec"],
    )
