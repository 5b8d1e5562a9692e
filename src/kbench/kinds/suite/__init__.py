"""The suite kind: whole tools run N times (hackbench, stress-ng, fio, sysbench, netperf; ``kbench.suites``).

A run keeps one value per iteration of every metric the tool reports; the primary
metric comes first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.contract.benchmark import Benchmark
from kbench.contract.formats import SUITE_FORMAT
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.kinds.base import KindDefaults, PrimaryMetric, transport_of
from kbench.suites.listing import SUITE_KIND, suite_benchmarks
from kbench.targets.base import ProgressCallback, Target


class SuiteKind(KindDefaults):
    name = SUITE_KIND
    counted = True
    counts_with_perf = True
    profiled = True
    whole_tool = True

    def benchmarks(self) -> tuple[Benchmark, ...]:
        return tuple(suite.as_benchmark() for suite in suite_benchmarks())

    def primary_metric(self, benchmark: Benchmark, params: Mapping[str, str]) -> str:
        return benchmark.metric

    def wrote(self, header: Mapping[str, Any]) -> bool:
        return header.get("format") == SUITE_FORMAT

    def series(
        self, measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
    ) -> list[MetricSeries]:
        import numpy as np

        found = [
            MetricSeries(m["name"], m["unit"], m["direction"], measurement.columns[m["name"]].astype(np.float64))
            for m in measurement.header["metrics"]
            if m["name"] in measurement.columns
        ]
        found.sort(key=lambda series: series.name != primary.name)
        return found


    def run(
        self, target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        from kbench.kinds.suite.run import run_suite_on

        return run_suite_on(transport_of(target, benchmark), benchmark, request)


KIND = SuiteKind()
