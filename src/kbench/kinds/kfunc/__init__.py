"""The kfunc kind: kernel functions timed inside kbench.ko (``kfunc.*``).

The built-in ones are read from kbench.ko's sources (``catalog``, ``source``); a module
of one's own registers more at run time (see ``kbench kmod new``). A run's samples are
cycles per call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.contract.benchmark import Benchmark
from kbench.contract.limits import KFUNC
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.kinds.base import KindDefaults, PrimaryMetric, per_operation_series, transport_of
from kbench.kinds.kfunc.catalog import COMMON_PARAMS, NAME, kfunc_benchmarks
from kbench.targets.base import ProgressCallback, Target

KMOD_FORMAT = "kbench-kmod/1"
"""The ``format`` of a kbench.ko run's header (docs/sysfs-ABI.md)."""


class KfuncKind(KindDefaults):
    name = NAME
    counted = True
    counters_by_default = True
    profiled = True
    sample_unit = "cycles"
    in_kernel = True
    limits = KFUNC
    shared_params = COMMON_PARAMS

    def benchmarks(self) -> tuple[Benchmark, ...]:
        return kfunc_benchmarks()

    def primary_metric(self, benchmark: Benchmark, params: Mapping[str, str]) -> str:
        return benchmark.metric

    def wrote(self, header: Mapping[str, Any]) -> bool:
        return header.get("format") == KMOD_FORMAT

    def series(
        self, measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
    ) -> list[MetricSeries]:
        return per_operation_series(measurement, primary, subtract_overhead=subtract_overhead)


    def run(
        self, target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        from kbench.kinds.kfunc.run import run_kfunc

        return run_kfunc(transport_of(target, benchmark), benchmark, request)


KIND = KfuncKind()
