"""A will-it-scale run: the RunRequest as ``kbench-probe scale`` arguments, run by the target's probe."""

from __future__ import annotations

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import BadRequest, RunRequest
from kbench.kinds.base import run_probe_measurement
from kbench.kinds.scale.catalog import DEFAULT_DURATION_S, DEFAULT_WARMUP_S
from kbench.kinds.scale.result import scale_probe_args
from kbench.targets.run_bound import timed_bound
from kbench.targets.transport import Transport


def scale_args(benchmark: Benchmark, request: RunRequest) -> list[str]:
    """``--duration`` is the measured time, ``--warmup`` a duration (whole seconds of warm-up)."""
    if request.samples is not None or request.batch is not None or request.warmup_samples is not None:
        raise BadRequest(
            f"{benchmark.name} samples its task counters once per interval: use --duration and a warm-up "
            "duration (e.g. --duration 10s --warmup 2s), not --samples, --batch or a warm-up count"
        )
    params = request.params
    tasks = int(params.get("nr_task", "1"))
    mode = params.get("mode", "process")
    try:
        return scale_probe_args(
            benchmark.workload,
            tasks,
            mode,
            request.duration_s or DEFAULT_DURATION_S,
            request.warmup_duration_s if request.warmup_duration_s is not None else DEFAULT_WARMUP_S,
            float(params.get("interval", "1")),
            counters=request.counters,
            ignore_failure=request.ignore_failure,
        )
    except ValueError as exc:
        raise BadRequest(f"{benchmark.name}: {exc}") from exc


def run_scale(target: Transport, benchmark: Benchmark, request: RunRequest) -> Measurement:
    """One run on ``target``; a guest's run is bounded by its durations (``run_bound.timed_bound``)."""
    args = scale_args(benchmark, request)
    bound = None
    if target.in_guest:
        bound = timed_bound(request.duration_s or DEFAULT_DURATION_S,
                            request.warmup_duration_s if request.warmup_duration_s is not None else DEFAULT_WARMUP_S)
    return run_probe_measurement(target, benchmark, args, bound)
