"""The instructions kind: a benchmark's instructions counted instead of timed (``--metric instructions``).

A counted benchmark is a probe workload (``syscall.*``, ``command``) or an in-kernel one
(``kfunc.*``) given to this kind by ``benchmark.counted``: same name and parameters, its
metric ``<name>.instructions`` in instructions per operation, lower is better. Where it
runs decides the counter (``source``): on this machine the PMU (``perf_event_open``) where
it counts instructions, otherwise valgrind; in a guest, kbench's qemu TCG plugin over the
regions kbench.ko and ``kbench-probe --mark`` mark (docs/instructions.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.contract.benchmark import Benchmark
from kbench.contract.counts import COUNTS_FORMAT
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.kinds.base import KindDefaults, PrimaryMetric, transport_of
from kbench.kinds.instructions.benchmark import COUNTED_LIMITS, NAME
from kbench.targets.base import ProgressCallback, Target


class InstructionsKind(KindDefaults):
    name = NAME
    limits = COUNTED_LIMITS

    def benchmarks(self) -> tuple[Benchmark, ...]:
        return ()  # every probe and kbench.ko benchmark can be counted; none is only counted

    def primary_metric(self, benchmark: Benchmark, params: Mapping[str, str]) -> str:
        return benchmark.metric

    def wrote(self, header: Mapping[str, Any]) -> bool:
        return header.get("format") == COUNTS_FORMAT

    def series(
        self, measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
    ) -> list[MetricSeries]:
        from kbench.kinds.instructions.measurement import count_series  # numpy: not for `kbench list`

        return count_series(measurement, primary)

    def run(
        self, target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        from kbench.kinds.instructions.run import counted_run

        return counted_run(transport_of(target, benchmark), benchmark, request)


KIND = InstructionsKind()
