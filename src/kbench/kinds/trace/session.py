"""Runs with kbench.ko's log on: a traced kfunc run, the instruments' overhead, ``kbench trace``.

What a benchmark kind needs from this room:

- ``traced_kfunc_run(module, benchmark, request)``: a kbench.ko run with the log reset
  before and finalized after; the entries, if the benchmark logged any, ride in the
  measurement's header (``TraceLog.to_embedded``), with the tracepoints' overhead
  measured once per boot when tracepoints logged;
- ``TracePlan`` (``plan``) + ``trace_measurement(host, plan)``: probes armed on kernel functions,
  a workload run with the log on, probes removed, the probe's own overhead measured; the
  result is a measurement whose sample columns are the log's entries (``TRACE_FORMAT``);
- ``kbench.kinds.trace.series.trace_series``: such a measurement as metric series.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from kbench import interrupts
from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.progress import Step, no_steps
from kbench.contract.request import RunRequest
from kbench.kinds.kfunc.catalog import builtin_benchmark
from kbench.kinds.trace.plan import TracePlan
from kbench.targets.base import TargetError, TargetInfo
from kbench.targets.kmod_sysfs import KbenchModule
from kbench.trace.analysis import log_facts
from kbench.trace.kernel import KernelTraceLog, TraceError
from kbench.trace.log import KIND_FUNCTION, KIND_RUN, KIND_TRACEPOINT, TRACE_FORMAT, TraceLog
from kbench.trace.overhead import OverheadTable, ProbeOverhead, TracepointOverhead, tracepoint_overhead
from kbench.trace.selection import measured_entries
from kbench.trace.symbols import Kallsyms

OVERHEAD_BENCH = "kfunc.trace_overhead"
PROBE_BENCH = "kfunc.probe_target"
PROBE_TARGET = "kbench_probe_target_fn"
OVERHEAD_SAMPLES = 2000
OVERHEAD_WARMUP = 100
TIMER = "tsc (kernel, rdtsc_ordered)"

_tracepoint_overhead_cache: weakref.WeakKeyDictionary[object, TracepointOverhead] = weakref.WeakKeyDictionary()
"""The nested-pair overhead measured once per loaded module (keyed by its sysfs access)."""


def run_with_log(
    module: KbenchModule, log: KernelTraceLog, benchmark: Benchmark, request: RunRequest,
    spill: Path | None = None,
) -> tuple[Measurement, TraceLog]:
    """One kbench.ko run between ResetLog and FinalizeLog, and the log it left.

    When the run fails or is interrupted, the log is finalized if the kernel can still be
    reached; a failure to do so never hides why the run ended."""
    measurement = _run_after_reset(module, log, benchmark, request, spill)
    log.finalize()
    return measurement, log.read()


def _run_after_reset(
    module: KbenchModule, log: KernelTraceLog, benchmark: Benchmark, request: RunRequest, spill: Path | None,
) -> Measurement:
    """``module.run`` after ResetLog; when the run raises, FinalizeLog is tried (a failure to
    reach the kernel then is not what the caller hears) and the run's exception goes on."""
    log.reset()
    try:
        return module.run(benchmark, request, spill)
    except BaseException:
        with contextlib.suppress(TargetError):
            log.finalize()
        raise


def _overhead_request(benchmark: str, params: dict[str, str] | None = None) -> RunRequest:
    return RunRequest(benchmark=benchmark, params=params or {}, samples=OVERHEAD_SAMPLES,
                      warmup_samples=OVERHEAD_WARMUP, batch=1)


def measure_tracepoint_overhead(module: KbenchModule, log: KernelTraceLog) -> TracepointOverhead:
    """The seed's nested pair (key 0 around an empty key 1), OVERHEAD_SAMPLES times."""
    _, trace = run_with_log(module, log, builtin_benchmark(OVERHEAD_BENCH),
                            _overhead_request(OVERHEAD_BENCH, {"outer": "0", "inner": "1"}))
    return tracepoint_overhead(trace, 0, 1)


def measure_probe_overhead(module: KbenchModule, log: KernelTraceLog) -> ProbeOverhead:
    """A kretprobe on the empty ``kbench_probe_target_fn``: what it logs, what it adds per call.

    The unprobed calls are timed before and after the probed ones; their mean is the
    baseline, so a slow drift of the machine does not show up as overhead.
    """
    bench = builtin_benchmark(PROBE_BENCH)
    request = _overhead_request(PROBE_BENCH)
    before = module.run(bench, request)
    log.probe(PROBE_TARGET)
    try:
        probed, trace = run_with_log(module, log, bench, request)
    finally:
        log.unprobe(PROBE_TARGET)
    after = module.run(bench, request)
    slot = next(slot for slot, name in trace.functions.items() if name == PROBE_TARGET)
    entries = measured_entries(trace).entries
    effective = entries[(entries["kind"] == KIND_FUNCTION) & (entries["key"] == slot)]["cycles"].astype(np.float64)
    baseline = (_median_per_call(before) + _median_per_call(after)) / 2
    return ProbeOverhead(
        effective=OverheadTable.of(effective),
        median_effective=float(np.median(effective)) if effective.size else float("nan"),
        call_with_probe=_median_per_call(probed),
        call_without_probe=baseline,
    )


def _median_per_call(measurement: Measurement) -> float:
    return float(np.median(measurement.per_op("cycles")))


def traced_kfunc_run(
    module: KbenchModule, benchmark: Benchmark, request: RunRequest, spill: Path | None = None
) -> Measurement:
    """``module.run`` with the log on; entries the benchmark logged are kept in the header.
    The samples stream to ``spill`` as they are taken (``KbenchModule.run``). A run stopped
    by Ctrl-C keeps its samples even if a second one stops the log's reading."""
    log = KernelTraceLog(module.io)
    status = log.status_if_available()
    if status is None:
        return module.run(benchmark, request, spill)
    if int(status.get("room", 0)) == 0:
        return _with_warning(module.run(benchmark, request, spill),
                             "kbench.ko's trace log has no room (size 0): tracepoints were not logged")
    measurement = _run_after_reset(module, log, benchmark, request, spill)
    try:
        with interrupts.keep_first() as kept:  # the samples are in memory only: a first interrupt keeps them
            log.finalize()
            trace = log.read()
    except (KeyboardInterrupt, TargetError) as exc:
        if not measurement.interrupted:
            raise
        why = "interrupted again" if isinstance(exc, KeyboardInterrupt) else str(exc)
        return _with_warning(measurement, f"kbench.ko's trace log was not read ({why}): the samples are kept")
    if kept.stopped and not measurement.interrupted:
        measurement = dataclasses.replace(measurement, interrupted=True,
                                          header={**measurement.header, "interrupted": True})
    if not np.any(trace.entries["kind"] != KIND_RUN):
        return measurement
    embedded = trace.to_embedded()
    logged_tracepoints = np.any(trace.entries["kind"] == KIND_TRACEPOINT)
    if benchmark.workload != builtin_benchmark(OVERHEAD_BENCH).workload and logged_tracepoints:
        if module.io not in _tracepoint_overhead_cache:
            _tracepoint_overhead_cache[module.io] = measure_tracepoint_overhead(module, log)
        embedded["tracepoint_overhead"] = _tracepoint_overhead_cache[module.io].to_json()
    header = {**measurement.header, "trace": embedded}
    header["warnings"] = [*header.get("warnings", []), *log_warnings(trace)]
    return dataclasses.replace(measurement, header=header)


def _with_warning(measurement: Measurement, warning: str) -> Measurement:
    header = {**measurement.header, "warnings": [*measurement.header.get("warnings", []), warning]}
    return dataclasses.replace(measurement, header=header)


def log_warnings(trace: TraceLog) -> list[str]:
    facts = log_facts(trace)
    found = []
    if facts["overflow"]:
        found.append(
            f"trace log overflow: {facts['overflow']} entries did not fit and were counted, not stored "
            f"(log of {facts['size']} entries, layout {facts['layout']}); enlarge it (kbench trace --log-size, "
            "or /sys/kernel/kbench/trace/size)"
        )
    if facts["invalid_keys"]:
        found.append(f"{facts['invalid_keys']} tracepoint START/STOP calls used a key the module does not have "
                     "(trace_keys module parameter): nothing was logged for them")
    if facts["foreign_stops"]:
        found.append(f"{facts['foreign_stops']} STOPs found another task's START of the key on their CPU "
                     "(preempted or migrated regions): not logged")
    return found


# -- kbench trace -----------------------------------------------------------------------


class TraceHost(Protocol):
    """A kernel with kbench.ko loaded, as ``kbench trace`` uses it."""

    def info(self) -> TargetInfo: ...

    def sysinfo(self) -> dict[str, Any]: ...

    def kbench_module(self) -> KbenchModule: ...

    def kallsyms(self) -> str: ...

    def run_workload(self, benchmark: Benchmark, request: RunRequest) -> Measurement:
        """A non-kbench.ko benchmark (a probe workload) on this kernel."""
        ...

    def run_command(self, command: str, timeout: float) -> CommandResult: ...


@dataclass(frozen=True)
class CommandResult:
    rc: int
    stdout: str
    stderr: str
    timed_out: bool


def check_functions(host: TraceHost, functions: Sequence[str]) -> None:
    """UnknownFunction (with near matches) or ProbeRefused before anything is measured.

    Each function is probed and unprobed once, so that one kprobes refuse is reported
    now rather than after a stored run has begun.
    """
    if not functions:
        return
    symbols = Kallsyms.parse(host.kallsyms())
    for name in functions:
        symbols.check(name)
    log = KernelTraceLog(host.kbench_module().io)
    _require_log(log)
    log.finalize()
    log.clear_probes()
    for name in functions:
        log.probe(name)
        log.unprobe(name)


def _require_log(log: KernelTraceLog) -> None:
    if not log.available():
        raise TraceError("kbench.ko in this kernel has no trace log (/sys/kernel/kbench/trace): rebuild it")


def trace_measurement(host: TraceHost, plan: TracePlan, progress: Step = no_steps) -> Measurement:
    """Probe, run the workload with the log on, unprobe, measure the probe; entries as columns.
    ``progress`` hears of each phase (kbench.contract.progress)."""
    phases = 3 if plan.measure_overhead else 2
    module = host.kbench_module()
    log = KernelTraceLog(module.io)
    _require_log(log)
    log.finalize()  # a log someone left on would refuse the probes
    if plan.log_size is not None:
        log.set_size(plan.log_size)
    log.clear_probes()
    workload: dict[str, Any]
    stderr = ""
    try:
        if plan.functions:
            progress(f"placing kretprobes on {', '.join(plan.functions)}", 0, phases)
        for name in plan.functions:
            log.probe(name)
        progress(f"running {plan.during.name if plan.during is not None else 'the command'} with the log on",
                 1, phases)
        if plan.during is not None:
            workload_run, trace = _run_benchmark(host, module, log, plan.during, plan.during_request)
            workload = _workload_json(plan.during, workload_run)
        else:
            assert plan.command is not None
            log.reset()
            try:
                result = host.run_command(plan.command, plan.timeout)
            finally:
                log.finalize()
            trace = log.read()
            stderr = result.stderr
            workload = {"command": plan.command, "rc": result.rc, "timed_out": result.timed_out,
                        "stdout_tail": result.stdout[-2000:], "stderr_tail": result.stderr[-2000:]}
        missed = {probe.name: probe.missed for probe in log.functions()}
    finally:
        log.clear_probes()
    context: dict[str, Any] = {
        **trace.context_json(), "keys": list(plan.keys), "sums": [list(keys) for keys in plan.sums],
        "missed": missed, "facts": log_facts(trace), "probe": "kretprobe",
    }
    if plan.measure_overhead:
        progress("measuring the probes' own overhead", 2, phases)
    if plan.measure_overhead and plan.functions:
        context["probe_overhead"] = measure_probe_overhead(module, log).to_json()
    if plan.measure_overhead and np.any(trace.entries["kind"] == KIND_TRACEPOINT):
        context["tracepoint_overhead"] = measure_tracepoint_overhead(module, log).to_json()
    warnings = log_warnings(trace) + _trace_warnings(trace, plan, missed, workload)
    columns = trace.to_columns()
    header = {
        "format": TRACE_FORMAT,
        "trace": context,
        "workload": workload,
        "timer": {"name": TIMER, "hz": trace.tsc_khz * 1000, "tsc_khz": trace.tsc_khz},
        "columns": list(columns),
        "n": trace.n,
        "warnings": warnings,
    }
    return Measurement(header=header, columns=columns, interrupted=False, stderr=stderr)


def _run_benchmark(
    host: TraceHost, module: KbenchModule, log: KernelTraceLog, benchmark: Benchmark, request: RunRequest | None
) -> tuple[Measurement, TraceLog]:
    request = request or RunRequest(benchmark=benchmark.name)
    if benchmark.kind == "kfunc":
        return run_with_log(module, log, benchmark, request)
    log.reset()
    try:
        measurement = host.run_workload(benchmark, request)
    finally:
        log.finalize()
    return measurement, log.read()


def _workload_json(benchmark: Benchmark, measurement: Measurement) -> dict[str, Any]:
    data: dict[str, Any] = {"benchmark": benchmark.name, "unit": benchmark.unit, "n": measurement.n,
                            "batch": measurement.header.get("batch")}
    if measurement.n:
        values = measurement.per_op(benchmark.unit)
        data.update(median=float(np.median(values)), min=float(values.min()))
    if measurement.header.get("kernel_run"):
        data["kernel_run"] = measurement.header["kernel_run"]
    return data


def _trace_warnings(trace: TraceLog, plan: TracePlan, missed: dict[str, int], workload: dict[str, Any]) -> list[str]:
    found = []
    logged = {trace.functions.get(int(key)) for key in trace.of_kind(KIND_FUNCTION)["key"]}
    for name in plan.functions:
        if name not in logged:
            found.append(f"{name} was not called while the workload ran: nothing was logged for it")
        if missed.get(name):
            found.append(f"{missed[name]} calls of {name} were missed by its kretprobe (too many in flight at once, "
                         "or a call from inside another probe)")
    keys = set(trace.of_kind(KIND_TRACEPOINT)["key"].tolist())
    for key in plan.keys:
        if key not in keys:
            found.append(f"tracepoint key {key} logged nothing while the workload ran")
    if workload.get("rc"):
        found.append(f"the command exited with status {workload['rc']}")
    if workload.get("timed_out"):
        found.append("the command was killed at the timeout")
    return found


class TraceTarget:
    """``kbench trace`` as a Target for ``execute_run``: the trace kind's run is the whole session."""

    def __init__(self, host: TraceHost, plan: TracePlan, progress: Step = no_steps):
        self.host = host
        self.plan = plan
        self.progress = progress

    def info(self) -> TargetInfo:
        return self.host.info()

    def sysinfo(self) -> dict[str, Any]:
        return self.host.sysinfo()
