"""A kfunc run: kbench.ko loaded by the target, one run through its sysfs with the trace log on,
its samples streamed to the spill the engine names (``contract.spill``)."""

from __future__ import annotations

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.spill import spill_destination
from kbench.kinds.trace.session import traced_kfunc_run
from kbench.targets.transport import Transport


def run_kfunc(target: Transport, benchmark: Benchmark, request: RunRequest) -> Measurement:
    with target.kbench_module(benchmark.name) as module:
        return traced_kfunc_run(module, benchmark, request, spill_destination())
