"""What every kind of benchmark provides to the catalog and the engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.targets.base import TIMED_OUT, ProgressCallback, Target, TargetError
from kbench.targets.transport import Transport


@dataclass(frozen=True)
class PrimaryMetric:
    """The metric a run is stored under, with its unit and direction."""

    name: str
    unit: str
    direction: str


class Kind(Protocol):
    """One kind of benchmark (probe, kfunc, scale, suite, trace)."""

    @property
    def name(self) -> str: ...

    def benchmarks(self) -> tuple[Benchmark, ...]:
        """Its catalog entries, in its own order."""
        ...

    def primary_metric(self, benchmark: Benchmark, params: Mapping[str, str]) -> str:
        """The metric a run of ``benchmark`` with ``params`` is stored under."""
        ...

    def wrote(self, header: Mapping[str, Any]) -> bool:
        """True when ``header`` (a measurement's, also a stored one) is this kind's output."""
        ...

    def series(
        self, measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
    ) -> list[MetricSeries]:
        """Every metric of ``measurement``, the primary one first (none without samples)."""
        ...

    def run(
        self, target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        """Run ``benchmark`` once on ``target`` with its transport operations (TargetError on failure)."""
        ...


def transport_of(target: Target, benchmark: Benchmark) -> Transport:
    """``target`` as a transport (TargetError for a target that runs no benchmarks of that kind)."""
    if not isinstance(target, Transport):
        raise TargetError(f"{benchmark.name}: this target does not run {benchmark.kind} benchmarks")
    return target


def run_probe_measurement(
    target: Transport, benchmark: Benchmark, args: Sequence[str], bound: float | None,
    progress: ProgressCallback | None = None, spill: Path | None = None,
) -> Measurement:
    """``kbench-probe ARGS`` on the target, its output as a measurement (its samples streamed
    to ``spill`` as they are taken, when given)."""
    from kbench.targets.probe_measurement import measurement_from_invocation

    invocation = target.run_probe(args, progress, bound, spill)
    if invocation.exit_code == TIMED_OUT:
        raise TargetError(f"{benchmark.name} did not finish within its bound of {bound or 0:.0f} s in the guest; "
                          "it was stopped")
    return measurement_from_invocation(invocation)


def per_operation_series(
    measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
) -> list[MetricSeries]:
    """One series: the time of one operation in each sample (probe and kfunc runs)."""
    if measurement.n == 0:
        return []
    values = measurement.per_op(primary.unit, subtract_overhead=subtract_overhead)
    return [MetricSeries(primary.name, primary.unit, primary.direction, values)]
