"""The scale kind: will-it-scale, N tasks loop one testcase (``will-it-scale.*``).

``kbench-probe scale TEST --tasks N --mode process|thread`` samples the tasks' counters
once per interval (docs/probe-format.md, section "scale"). The Python side of that
contract: ``testcases`` (what the probe offers), ``catalog`` (the benchmarks),
``result`` (the probe's arguments, its output parsed, the metrics). Every interval's
sample is kept; warm-up intervals are flagged (``steady`` is False), never dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.kinds.base import KindDefaults, PrimaryMetric, transport_of
from kbench.kinds.scale.catalog import NAME, scale_benchmarks
from kbench.targets.base import ProgressCallback, Target


class ScaleKind(KindDefaults):
    name = NAME
    counted = True
    scaling = True

    def benchmarks(self) -> tuple[Benchmark, ...]:
        return scale_benchmarks()

    def primary_metric(self, benchmark: Benchmark, params: Mapping[str, str]) -> str:
        """Thread-mode runs report ``per_thread_ops`` (as will-it-scale names it)."""
        if params.get("mode") == "thread":
            return benchmark.metric.replace(".per_process_ops", ".per_thread_ops")
        return benchmark.metric

    def wrote(self, header: Mapping[str, Any]) -> bool:
        return header.get("kind") == "scale"

    def series(
        self, measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
    ) -> list[MetricSeries]:
        """One value per steady (post-warm-up) interval: per-task rate first, then total and idle."""
        import numpy as np

        from kbench.kinds.scale.result import scale_from_output
        from kbench.targets.probe_output import ProbeOutput

        names = list(measurement.header["columns"])
        rows = (
            np.column_stack([measurement.columns[name] for name in names])
            if measurement.n
            else np.zeros((0, len(names)), dtype=np.uint64)
        )
        result = scale_from_output(ProbeOutput(header=measurement.header, rows=rows))
        steady = result.steady
        prefix = result.benchmark
        idle = steady.idle_fraction[~np.isnan(steady.idle_fraction)]
        return [
            MetricSeries(f"{prefix}.{result.per_task_stat}", "ops/s", HIGHER_IS_BETTER, steady.per_task_ops_per_s),
            MetricSeries(f"{prefix}.ops", "ops/s", HIGHER_IS_BETTER, steady.total_ops_per_s),
            MetricSeries(f"{prefix}.idle", "fraction", LOWER_IS_BETTER, idle),
        ]


    def run(
        self, target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        from kbench.kinds.scale.run import run_scale

        return run_scale(transport_of(target, benchmark), benchmark, request)


KIND = ScaleKind()
