"""Run a standard suite (hackbench, stress-ng, fio, sysbench) and return its metrics."""

from __future__ import annotations

import json

import numpy as np

from kbench.contract.benchmark import Benchmark
from kbench.contract.formats import SUITE_FORMAT
from kbench.contract.measurement import Measurement
from kbench.contract.request import BadRequest, RunRequest
from kbench.suites import get_suite, run_suite
from kbench.suites.errors import SuiteError
from kbench.targets.base import TargetError

SUITE_TIMEOUT_FLOOR_S = 600.0


def run_suite_benchmark(benchmark: Benchmark, request: RunRequest) -> Measurement:
    """Run the suite test ``request.iterations`` times; one value per iteration and metric."""
    if request.samples is not None or request.duration_s is not None or request.batch is not None:
        raise BadRequest(
            f"{benchmark.name} is a whole-tool benchmark: use --iterations and its own parameters "
            "(not --samples, --duration or --batch)"
        )
    suite = get_suite(benchmark.workload.split(".", 1)[0])
    timeout = SUITE_TIMEOUT_FLOOR_S
    if suite.duration_param and suite.duration_param in request.params:
        timeout = max(timeout, 2 * float(request.params[suite.duration_param]) + 120)
    try:
        result = run_suite(benchmark.workload, request.params, iterations=request.iterations, timeout=timeout)
    except SuiteError as exc:
        raise TargetError(str(exc)) from exc
    record = result.to_dict()
    columns = {name: np.asarray(values, dtype=np.float64) for name, values in result.raw().items()}
    header = {
        "format": SUITE_FORMAT,
        "workload": benchmark.workload,
        "params": {key: str(value) for key, value in result.params.items()},
        "command": record["command"],
        "tool_path": record["tool_path"],
        "tool_version": record["tool_version"],
        "package": record["package"],
        "metrics": record["metrics"],
        "iterations": len(result.iterations),
        "columns": list(columns),
        "n": len(result.iterations),
        "interrupted": result.interrupted,
        "warnings": [],
    }
    return Measurement(
        header=header, columns=columns, interrupted=result.interrupted, stderr=json.dumps(record["iterations"])
    )
