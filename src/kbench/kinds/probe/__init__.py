"""The probe kind: user-space workloads timed by ``kbench-probe run`` (``syscall.*``, ``command``).

The workloads are defined once, in the probe's C table (native/probe/workloads.c);
``kbench-probe --list`` is read here so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from kbench.contract.benchmark import Benchmark, ParamSpec
from kbench.contract.limits import PROBE
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.contract.vocabulary import LOWER_IS_BETTER
from kbench.kinds.base import KindDefaults, PrimaryMetric, per_operation_series, transport_of
from kbench.native import find_native
from kbench.targets.base import ProgressCallback, Target

NAME = "probe"


def _benchmark(entry: dict[str, Any]) -> Benchmark:
    workload = entry["name"]
    name = "command" if workload == "command" else f"syscall.{workload}"
    stat = "wall" if workload == "command" else "latency"
    return Benchmark(
        name=name,
        kind=NAME,
        workload=workload,
        description=entry.get("description", ""),
        unit="ns",
        metric=f"{name}.{stat}",
        direction=LOWER_IS_BETTER,
        params=tuple(
            ParamSpec(
                name=p["name"],
                type=p.get("type", "str"),
                default=str(p.get("default", "")),
                description=p.get("description", ""),
            )
            for p in entry.get("params", [])
        ),
        columns=tuple(entry.get("columns", ["ticks"])),
    )


@cache
def probe_benchmarks() -> tuple[Benchmark, ...]:
    """The probe's workloads as benchmarks (``kbench-probe --list``, kept in kbench's cache
    directory per probe binary: kinds/probe/listing.py)."""
    from kbench.kinds.probe.listing import probe_list

    return tuple(_benchmark(entry) for entry in probe_list(find_native("kbench-probe")))


class ProbeKind(KindDefaults):
    name = NAME
    counted = True
    counters_by_default = True
    profiled = True
    sample_unit = "ns"
    limits = PROBE

    def operation_syscall(self, benchmark: Benchmark) -> int | None:
        """``syscall.<test>``'s system call (``syscall.writev_t1k`` is writev)."""
        from kbench.trace.tracking import syscall_of_workload

        return syscall_of_workload(benchmark.name)

    def benchmarks(self) -> tuple[Benchmark, ...]:
        return probe_benchmarks()

    def primary_metric(self, benchmark: Benchmark, params: Mapping[str, str]) -> str:
        return benchmark.metric

    def wrote(self, header: Mapping[str, Any]) -> bool:
        from kbench.targets.probe_output import PROBE_FORMAT

        return header.get("format") == PROBE_FORMAT and header.get("kind") is None

    def series(
        self, measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
    ) -> list[MetricSeries]:
        return per_operation_series(measurement, primary, subtract_overhead=subtract_overhead)


    def run(
        self, target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        from kbench.kinds.probe.run import run_probe_benchmark

        return run_probe_benchmark(transport_of(target, benchmark), benchmark, request, progress)


KIND = ProbeKind()
