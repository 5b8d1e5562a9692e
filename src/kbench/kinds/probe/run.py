"""A probe run: ``kbench-probe run`` through the target; in a guest, bounded by the run's expected length.

The run's samples are streamed to the spill the engine names (``contract.spill``); the
short run that times a guest run's bound is not.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import DEFAULT_SAMPLES, RunRequest
from kbench.contract.spill import spill_destination
from kbench.kinds.base import run_probe_measurement
from kbench.targets.base import TIMED_OUT, ProgressCallback, TargetError
from kbench.targets.probe_measurement import measurement_from_invocation, measurements_from_invocation
from kbench.targets.probe_output import ProbeOutputError, parse_probe_output
from kbench.targets.run_bound import MIN_BOUND_S, bound_for, timed_bound
from kbench.targets.transport import Transport

ESTIMATE_SAMPLES = 200
"""A count-mode run in a guest is preceded by this many samples, timed for its bound."""


def run_probe_benchmark(
    target: Transport, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
) -> Measurement:
    bound = None
    if target.in_guest:
        if request.duration_s is None:
            bound = count_mode_bound(target, benchmark, request)
        else:
            bound = timed_bound(request.duration_s, request.warmup_duration_s or 0.0)
    return run_probe_measurement(target, benchmark, request.probe_args(benchmark.workload), bound, progress,
                                 spill_destination())


def run_probe_sequence(target: Transport, runs: Sequence[tuple[Benchmark, RunRequest]]) -> list[Measurement]:
    """The runs one after another in one probe process (``kbench-probe sequence``), a measurement each.

    One process for all: whatever a process brings (its placement in memory, the speed it
    happens to run at, TSC calibration) is the same for every run of the sequence. Interrupted:
    the runs finished so far and the one stopped, the last marked interrupted.
    """
    args = ["sequence"]
    bounds: dict[tuple[str, ...], float] = {}  # one estimate per distinct run, not one per slot
    bound = MIN_BOUND_S
    for benchmark, request in runs:
        run_args = request.probe_args(benchmark.workload)
        args += ["--", *run_args[1:]]
        if target.in_guest:
            key = tuple(run_args)
            if key not in bounds:
                bounds[key] = (count_mode_bound(target, benchmark, request) if request.duration_s is None
                               else timed_bound(request.duration_s, request.warmup_duration_s or 0.0))
            bound += bounds[key] - MIN_BOUND_S  # every run's expected share; the floor once
    names = ", ".join(dict.fromkeys(benchmark.name for benchmark, _ in runs))
    invocation = target.run_probe(args, None, bound if target.in_guest else None)
    if invocation.exit_code == TIMED_OUT:
        raise TargetError(f"a sequence of {len(runs)} runs ({names}) did not finish within its bound of "
                          f"{bound:.0f} s in the guest; it was stopped")
    measurements = measurements_from_invocation(invocation)
    if not invocation.interrupted and len(measurements) != len(runs):
        raise TargetError(f"a sequence of {len(runs)} runs wrote {len(measurements)}; probe stderr: "
                          f"{invocation.stderr.strip()}")
    return measurements


def count_mode_bound(target: Transport, benchmark: Benchmark, request: RunRequest) -> float:
    """The bound of a count-mode probe run, from a short run of the same workload."""
    import numpy as np

    sample = replace(request, samples=ESTIMATE_SAMPLES, warmup_samples=0, warmup_duration_s=None)
    started = time.monotonic()
    invocation = target.run_probe(sample.probe_args(benchmark.workload), bound=MIN_BOUND_S)
    spent = time.monotonic() - started
    if invocation.interrupted:
        raise KeyboardInterrupt
    try:
        per_op_s = float(np.percentile(measurement_from_invocation(invocation).per_op("ns"), 95)) * 1e-9
        batch = int(parse_probe_output(invocation.stdout).header.get("batch") or 1)
    except (TargetError, ProbeOutputError, KeyError, ValueError, IndexError):
        return bound_for(spent)  # the real run will say what is wrong
    samples = request.samples or DEFAULT_SAMPLES
    warmup = request.warmup_samples if request.warmup_samples is not None else samples
    return bound_for(spent + (samples + warmup) * per_op_s * batch + (request.warmup_duration_s or 0.0))
