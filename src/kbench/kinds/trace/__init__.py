"""The trace kind: kernel functions and tracepoint keys timed in place (``kbench trace``).

A trace run's samples are the entries of kbench.ko's log (``kbench.trace``); its series
are one per traced function and key, and each sum the run asked for. Its runs are made
by ``kbench trace``, so it adds no benchmark of its own to the catalog.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.kinds.base import KindDefaults, PrimaryMetric
from kbench.targets.base import ProgressCallback, Target, TargetError


class TraceKind(KindDefaults):
    name = "trace"

    def benchmarks(self) -> tuple[Benchmark, ...]:
        return ()

    def primary_metric(self, benchmark: Benchmark, params: Mapping[str, str]) -> str:
        return benchmark.metric

    def wrote(self, header: Mapping[str, Any]) -> bool:
        from kbench.trace.log import TRACE_FORMAT

        return header.get("format") == TRACE_FORMAT

    def series(
        self, measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
    ) -> list[MetricSeries]:
        from kbench.kinds.trace.series import trace_series

        return trace_series(measurement, primary.name)


    def run(
        self, target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        from kbench.kinds.trace.session import TraceTarget, trace_measurement

        if not isinstance(target, TraceTarget):
            raise TargetError(f"{benchmark.name}: a trace runs as a whole `kbench trace` session (TraceTarget)")
        return trace_measurement(target.host, target.plan, target.progress)


KIND = TraceKind()
