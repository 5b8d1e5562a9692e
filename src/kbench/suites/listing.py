"""Every ``<suite>.<test>`` as catalog-ready data: description, parameters, metrics."""

from __future__ import annotations

from dataclasses import dataclass

from kbench.contract.benchmark import Benchmark, ParamSpec, TaskCount
from kbench.suites.model import SuiteTest
from kbench.suites.suite import Suite

SUITE_KIND = "suite"


@dataclass(frozen=True)
class MetricSpec:
    """One metric of a suite test: ``name`` is ``<suite>.<test>.<stat>``."""

    name: str
    unit: str
    direction: str
    description: str


@dataclass(frozen=True)
class SuiteBenchmark:
    """A suite test as the catalog sees it; ``metric``/``unit``/``direction`` are its primary metric's.

    ``workload`` is the name to give ``run_suite``; ``params`` are catalog ParamSpecs
    (defaults as text); ``metrics`` lists every metric the test reports, primary first.
    """

    name: str
    suite: str
    test: str
    tool: str
    package: str
    description: str
    metric: str
    unit: str
    direction: str
    params: tuple[ParamSpec, ...]
    metrics: tuple[MetricSpec, ...]
    kind: str = SUITE_KIND
    task_count: TaskCount | None = None
    duration_param: str | None = None
    tools: tuple[str, ...] = ()
    unavailable: str = ""

    @property
    def workload(self) -> str:
        return self.name

    def as_benchmark(self) -> Benchmark:
        """The catalog Benchmark (kind "suite") for this test."""
        return Benchmark(
            name=self.name,
            kind=self.kind,
            workload=self.workload,
            description=self.description,
            unit=self.unit,
            metric=self.metric,
            direction=self.direction,
            params=self.params,
            task_count=self.task_count,
            duration_param=self.duration_param,
            tools=self.tools,
            unavailable=self.unavailable,
        )


def suite_benchmarks() -> list[SuiteBenchmark]:
    """Every test of every suite, in table order (suites, then their tests)."""
    from kbench.suites.registry import SUITES  # every tool's module: only when listing

    return [_benchmark(suite, test) for suite in SUITES for test in suite.tests]


def _benchmark(suite: Suite, test: SuiteTest) -> SuiteBenchmark:
    primary = test.primary
    return SuiteBenchmark(
        name=test.full_name,
        suite=suite.name,
        test=test.name,
        tool=suite.tool,
        package=suite.package,
        description=test.description,
        metric=test.metric_name(primary.stat),
        unit=primary.unit,
        direction=primary.direction,
        params=tuple(ParamSpec(p.name, p.type, p.default, p.description) for p in test.params),
        metrics=tuple(MetricSpec(test.metric_name(m.stat), m.unit, m.direction, m.description) for m in test.metrics),
        task_count=suite.task_count,
        duration_param=suite.duration_param,
        tools=suite.tools,
        unavailable=suite.why_unavailable(test),
    )
