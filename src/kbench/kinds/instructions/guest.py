"""Instructions counted in a guest by kbench's qemu TCG plugin (``targets.vm.plugin``).

kbench.ko marks each recorded sample's calls and ``kbench-probe --mark`` each measured sample's
operations; the plugin counts what the vCPU executed between the marks, kernel and user apart.
An in-kernel benchmark is counted with interrupts off in its samples (``irqs_off=1``), so that
no interrupt is ever counted in them; one that refuses that (``fib6_lookup``) runs with
preemption off, and the interrupts that reach its samples are counted in them. A user-space
workload cannot keep interrupts out: those that land in a sample are counted in it.
"""

from __future__ import annotations

import errno
from dataclasses import replace
from typing import Any

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.kinds.base import run_probe_measurement
from kbench.kinds.instructions.measurement import counted_measurement
from kbench.kinds.instructions.source import PLUGIN, CountSource
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport
from kbench.targets.vm.plugin import CountedRegions, InstructionLog

PLUGIN_TOOL = "kbench-icount, a qemu TCG plugin"
INTERRUPTS_OFF = "off in the samples (irqs_off=1): none counted"
KFUNC_VARIES = ("the samples ran with interrupts off, so a count varies only with the code's own path: its inputs "
                "(the dataset) and the state it finds (caches, allocators, locks)")
INTERRUPTS_COUNTED_VARIES = ("interrupts that reach a sample are counted in it, and the code's path varies with "
                             "its inputs and the state it finds")


def instruction_log(target: Transport, benchmark: Benchmark) -> InstructionLog:
    """The plugin's log of a guest booted to count instructions (TargetError for any other)."""
    log = getattr(target, "instruction_log", None)
    if not isinstance(log, InstructionLog):
        start = getattr(target, "start", None)
        if callable(start):
            start()
            log = getattr(target, "instruction_log", None)
    if not isinstance(log, InstructionLog):
        raise TargetError(f"{benchmark.name}: this guest was booted without kbench's instruction-counting plugin "
                          "(a guest counts instructions only when it was started for --metric instructions)")
    return log


def _calls(count: int, what: str) -> str:
    return f"{count} {what}{'s' if count != 1 else ''}"


def _source(region: str, varies: str) -> CountSource:
    return CountSource(PLUGIN, PLUGIN_TOOL, "kernel and user apart", region, varies)


def _checked(regions: CountedRegions, measured: Measurement, benchmark: Benchmark) -> list[str]:
    """Every sample must have its region (TargetError otherwise); warnings for regions lost."""
    if regions.n != measured.n:
        raise TargetError(f"{benchmark.name}: the plugin counted {regions.n} regions for {measured.n} samples "
                          f"({len(regions.loops)} recorded loops, {regions.lost} regions lost)")
    if regions.lost:
        return [f"the plugin lost {regions.lost} regions (a sample that ended on another vCPU than it started)"]
    return []


def kfunc_counts(target: Transport, benchmark: Benchmark, request: RunRequest) -> Measurement:
    """An in-kernel benchmark's run in the guest, every recorded sample's calls counted."""
    log = instruction_log(target, benchmark)
    params = dict(request.params)
    interrupts = INTERRUPTS_OFF
    varies = KFUNC_VARIES
    if "irqs_off" not in params and "preempt_off" not in params:
        params["irqs_off"] = "1"
    elif params.get("irqs_off") not in ("1", "true", "yes"):
        interrupts = "as asked (irqs_off=0): those reaching a sample are counted in it"
        varies = INTERRUPTS_COUNTED_VARIES
    with target.kbench_module(benchmark.name) as module:
        log.skip()
        try:
            measured = module.run(benchmark, replace(request, params=params, counters=False))
        except TargetError as exc:
            if getattr(exc, "errno", None) != errno.EOPNOTSUPP or "irqs_off" in request.params:
                raise
            params["irqs_off"], params["preempt_off"] = "0", "1"
            interrupts = "on (the benchmark refuses irqs_off=1): those reaching a sample are counted in it"
            varies = INTERRUPTS_COUNTED_VARIES
            log.skip()
            measured = module.run(benchmark, replace(request, params=params, counters=False))
        regions = log.take()
    warnings = _checked(regions, measured, benchmark)
    batch = int(measured.header.get("batch") or 1)
    details: dict[str, Any] = {
        "interrupts": interrupts, "kernel_run": measured.header.get("kernel_run"), "regions": regions.n,
        "region_kind": "kbench.ko recorded sample", "module_params": params,
    }
    return counted_measurement(
        _source(f"one recorded sample of {_calls(batch, 'call')}, between kbench.ko's marks", varies),
        workload=benchmark.workload, params=request.params, batch=batch, user=regions.user, kernel=regions.kernel,
        interrupted=measured.interrupted, details=details, warnings=warnings)


def probe_counts(target: Transport, benchmark: Benchmark, request: RunRequest) -> Measurement:
    """A probe workload's run in the guest (``--mark``), every measured sample's operations counted."""
    from kbench.kinds.probe.run import count_mode_bound

    log = instruction_log(target, benchmark)
    bound = count_mode_bound(target, benchmark, request)  # a short unmarked run: no regions
    log.skip()
    measured = run_probe_measurement(target, benchmark, [*request.probe_args(benchmark.workload), "--mark"], bound)
    regions = log.take()
    if not (measured.header.get("marks") or {}).get("emulator"):
        raise TargetError("kbench-probe in the guest was built without kbench's emulator marks (x86-64 only)")
    warnings = _checked(regions, measured, benchmark)
    batch = int(measured.header.get("batch") or 1)
    return counted_measurement(
        _source(f"one measured sample of {_calls(batch, 'operation')}, between kbench-probe's marks",
                INTERRUPTS_COUNTED_VARIES),
        workload=benchmark.workload, params=request.params, batch=batch, user=regions.user, kernel=regions.kernel,
        interrupted=measured.interrupted, warnings=warnings,
        details={"interrupts": "on (user space cannot keep them out): those reaching a sample are counted in it",
                 "regions": regions.n, "region_kind": "kbench-probe measured sample"})
