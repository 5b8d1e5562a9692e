"""A counted run: the counter that fits where the benchmark runs (docs/instructions.md).

- in a guest: kbench's TCG plugin (the guest must have been booted with it);
- on this machine: the PMU where it counts instructions, otherwise valgrind (user space only;
  an in-kernel benchmark on this kernel needs the PMU, kbench.ko's counters).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import BadRequest, RunRequest
from kbench.kinds.instructions import guest, pmu, valgrind
from kbench.kinds.instructions.benchmark import KFUNC_KIND, base_kind, is_command
from kbench.targets.base import TargetError
from kbench.targets.transport import Transport

COMMAND_EXECUTIONS = 2
"""A command's executions per counted run by default: two tell whether the counts repeat."""
PMU_COMMAND_EXECUTIONS = 5
"""With the PMU, whose counts vary a little: enough to judge them."""
PROBE_SAMPLES, PROBE_BATCH = 1000, 16
KFUNC_SAMPLES, KFUNC_BATCH, KFUNC_WARMUP = 1000, 1, 100


def counted_request(benchmark: Benchmark, request: RunRequest) -> RunRequest:
    """``request`` with what a counted run needs and the user left out: a fixed batch (an auto
    batch is calibrated by time, and would make two sides' samples differ), a count of samples
    (counts need few), no duration (BadRequest: counters count operations, not seconds)."""
    if request.duration_s is not None or request.warmup_duration_s is not None:
        raise BadRequest(f"{benchmark.name}: --metric instructions takes a count of samples (--samples), "
                         "not a duration")
    if is_command(benchmark):
        return replace(request, batch=1, warmup_samples=0)
    if base_kind(benchmark) == KFUNC_KIND:
        return replace(request, samples=request.samples or KFUNC_SAMPLES, batch=request.batch or KFUNC_BATCH,
                       warmup_samples=KFUNC_WARMUP if request.warmup_samples is None else request.warmup_samples)
    return replace(request, samples=request.samples or PROBE_SAMPLES, batch=request.batch or PROBE_BATCH)


def check_local_kernel_counting(benchmark: str) -> None:
    """BadRequest, before anything is loaded, for an in-kernel benchmark counted on this kernel
    where no PMU counts instructions (valgrind cannot see the kernel)."""
    if not pmu.pmu_counts_instructions():
        raise BadRequest(f"{benchmark}: this machine has no PMU that counts instructions and valgrind cannot see "
                         "the kernel: count it in a guest (--kernel deb:RELEASE, kbench's TCG plugin)")


def counted_run(target: Transport, benchmark: Benchmark, request: RunRequest) -> Measurement:
    """Count ``benchmark``'s instructions on ``target`` (TargetError saying why it cannot be)."""
    request = counted_request(benchmark, request)
    cwd: Path | None = getattr(target, "cwd", None)
    if target.in_guest:
        if base_kind(benchmark) == KFUNC_KIND:
            return guest.kfunc_counts(target, benchmark, request)
        if is_command(benchmark):
            raise TargetError("a command's instructions are counted on this machine (the PMU or valgrind): "
                              "compare commands without --kernel")
        return guest.probe_counts(target, benchmark, request)
    if base_kind(benchmark) == KFUNC_KIND:
        if not pmu.pmu_counts_instructions():
            raise TargetError(f"{benchmark.name}: this machine has no PMU that counts instructions, and valgrind "
                              "cannot see the kernel: count it in a guest (--kernel deb:RELEASE: kbench's TCG plugin)")
        with target.kbench_module(benchmark.name) as module:
            return pmu.kfunc_counts(module.run(benchmark, replace(request, counters=True)), benchmark)
    if pmu.pmu_counts_instructions():
        if is_command(benchmark):
            return pmu.command_counts(target, benchmark, request, request.samples or PMU_COMMAND_EXECUTIONS)
        return pmu.probe_counts(target, benchmark, request)
    if is_command(benchmark):
        return valgrind.command_counts(benchmark, request, request.samples or COMMAND_EXECUTIONS, cwd)
    return valgrind.probe_counts(benchmark, request, cwd)
