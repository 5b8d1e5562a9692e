"""A probe run: ``kbench-probe run`` through the target; in a guest, bounded by the run's expected length."""

from __future__ import annotations

import time
from dataclasses import replace

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import DEFAULT_SAMPLES, RunRequest
from kbench.kinds.base import run_probe_measurement
from kbench.targets.base import ProgressCallback, TargetError
from kbench.targets.probe_measurement import measurement_from_invocation
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
    return run_probe_measurement(target, benchmark, request.probe_args(benchmark.workload), bound, progress)


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
