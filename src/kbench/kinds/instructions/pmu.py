"""Instructions from the CPU's own counter (``perf_event_open``), where this machine has one.

The probe's ``--counters`` and kbench.ko's ``counters`` already count ``instructions`` around the
measured region (docs/probe-format.md, docs/sysfs-ABI.md); this reads them. A hardware counter
sees interrupts and the rest of the system's effects on the measured thread, so repeated counts
differ a little: they are judged statistically.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from typing import Any

from kbench import children
from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.kinds.base import run_probe_measurement
from kbench.kinds.instructions.measurement import counted_measurement
from kbench.kinds.instructions.source import PMU, CountSource
from kbench.native import NativeToolMissing, find_native
from kbench.targets.base import TargetError
from kbench.targets.probe_output import ProbeOutputError, parse_probe_output
from kbench.targets.transport import Transport

PMU_VARIES = ("a hardware counter also counts what interrupts and page faults make the measured thread execute, "
              "and multiplexing scales a count")
PROBE_PROBE = ["run", "noop", "--samples", "10", "--warmup-samples", "0", "--batch", "1", "--counters",
               "--overhead-pairs", "100", "--timer", "clock"]


def instruction_count(header: Mapping[str, Any]) -> tuple[float, str] | None:
    """(instructions counted, scope) from a run header's ``counters`` (the probe's or kbench.ko's),
    scaled by enabled / running time when the event was multiplexed; None when not counted."""
    counters = header.get("counters")
    if not isinstance(counters, Mapping):
        return None
    for event in counters.get("events") or ():
        if event.get("name") != "instructions" or not event.get("supported"):
            continue
        value = float(event.get("value") or 0)
        enabled, running = float(event.get("enabled_ns") or 0), float(event.get("running_ns") or 0)
        if 0 < running < enabled:
            value *= enabled / running
        return value, str(counters.get("scope") or "user+kernel")
    return None


@cache
def pmu_counts_instructions() -> bool:
    """Whether this machine's PMU counts instructions for kbench-probe (a 10-sample run of its
    ``noop`` workload with ``--counters``; ENOENT for ``instructions`` on a machine without one)."""
    try:
        probe = find_native("kbench-probe")
    except NativeToolMissing:
        return False
    done = children.run([str(probe), *PROBE_PROBE], capture_output=True, timeout=60)
    if done.returncode != 0:
        return False
    try:
        header = parse_probe_output(done.stdout).header
    except ProbeOutputError:
        return False
    return instruction_count(header) is not None


def pmu_source(scope: str, region: str) -> CountSource:
    return CountSource(PMU, "perf_event_open (instructions)", scope, region, PMU_VARIES)


def probe_counts(target: Transport, benchmark: Benchmark, request: RunRequest) -> Measurement:
    """A probe workload's run with its counters: one value, the instructions of its measured
    samples (``n × batch`` operations)."""
    counting = replace(request, counters=True)
    measured = run_probe_measurement(target, benchmark, counting.probe_args(benchmark.workload), None)
    found = instruction_count(measured.header)
    if found is None:
        raise TargetError(f"{benchmark.name}: the PMU did not count instructions in this run "
                          f"({json.dumps(measured.header.get('counters'))[:200]})")
    value, scope = found
    ops = measured.n * int(measured.header.get("batch") or 1)
    source = pmu_source(scope, f"the run's {measured.n} measured samples of {measured.header.get('batch')} operations")
    return counted_measurement(source, workload=benchmark.workload, params=request.params, batch=max(ops, 1),
                               user=[round(value)], kernel=None, interrupted=measured.interrupted,
                               details={"timed_median_ns": _median_ns(measured)})


def command_counts(target: Transport, benchmark: Benchmark, request: RunRequest, executions: int) -> Measurement:
    """A command's executions, each in a probe run of its own with its counters (inherited by the
    program): one value per execution."""
    values: list[int] = []
    scope = "user+kernel"
    one = replace(request, samples=1, warmup_samples=0, batch=1, counters=True, overhead_pairs=100, timer="clock")
    for _ in range(executions):
        measured = run_probe_measurement(target, benchmark, one.probe_args(benchmark.workload), None)
        found = instruction_count(measured.header)
        if found is None:
            raise TargetError(f"{benchmark.name}: the PMU did not count instructions in this execution")
        values.append(round(found[0]))
        scope = found[1]
    source = pmu_source(scope, "one execution of the program (the probe's spawn and wait included)")
    return counted_measurement(source, workload=benchmark.workload, params=request.params, batch=1,
                               user=values, kernel=None)


def kfunc_counts(module_run: Measurement, benchmark: Benchmark) -> Measurement:
    """A kbench.ko run with its counters on this kernel: one value, the instructions of its
    recorded loop (``n × batch`` calls, kernel mode)."""
    found = instruction_count(module_run.header)
    if found is None:
        raise TargetError(f"{benchmark.name}: kbench.ko's counters did not count instructions (no PMU?)")
    value, _ = found
    batch = int(module_run.header.get("batch") or 1)
    source = pmu_source("kernel (kbench.ko's thread)", f"the run's {module_run.n} recorded samples of {batch} calls")
    return counted_measurement(source, workload=benchmark.workload, params=module_run.header.get("params") or {},
                               batch=max(module_run.n * batch, 1), user=None, kernel=[round(value)],
                               interrupted=module_run.interrupted)


def _median_ns(measured: Measurement) -> float | None:
    import numpy as np

    return float(np.median(measured.per_op("ns"))) if measured.n else None
