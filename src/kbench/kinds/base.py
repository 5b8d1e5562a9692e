"""What every kind of benchmark provides to the catalog and the engine."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.series import MetricSeries


@dataclass(frozen=True)
class PrimaryMetric:
    """The metric a run is stored under, with its unit and direction."""

    name: str
    unit: str
    direction: str


class Kind(Protocol):
    """One kind of benchmark (probe, kfunc, scale, suite)."""

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


def per_operation_series(
    measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
) -> list[MetricSeries]:
    """One series: the time of one operation in each sample (probe and kfunc runs)."""
    if measurement.n == 0:
        return []
    values = measurement.per_op(primary.unit, subtract_overhead=subtract_overhead)
    return [MetricSeries(primary.name, primary.unit, primary.direction, values)]
