"""The one target factory of compare, job runs and fleet tasks (kbench.engine.target_factory)."""

from __future__ import annotations

import functools

from kbench.catalog.benchmarks import all_benchmarks
from kbench.contract.benchmark import Benchmark
from kbench.engine.target_factory import needs_perf, target_factory
from kbench.targets.factory import make_target


def _one(kind: str) -> Benchmark:
    """A benchmark of ``kind`` (a suite: one whose tool a guest must carry)."""
    return next(bench for bench in all_benchmarks().values() if bench.kind == kind and (bench.tools or kind != "suite"))


def _arguments(factory: object) -> dict[str, object]:
    assert isinstance(factory, functools.partial) and factory.func is make_target
    return dict(factory.keywords)


def test_a_guest_builds_kbench_ko_unless_only_whole_tools_run() -> None:
    suite, probe = _one("suite"), _one("probe")
    only_suites = _arguments(target_factory([suite]))
    assert only_suites["with_module"] is False and only_suites["suite_tools"] == suite.tools
    mixed = _arguments(target_factory([probe, suite], local_kernel=True))
    assert mixed["with_module"] is True and mixed["local_kernel"] is True and mixed["suite_tools"] == suite.tools
    assert _arguments(target_factory([probe]))["suite_tools"] == ()


def test_perf_goes_into_a_guest_for_profiles_and_a_suites_counters() -> None:
    suite, probe, kfunc = _one("suite"), _one("probe"), _one("kfunc")
    assert needs_perf([probe, kfunc], counters=False, profile=True)
    assert needs_perf([probe, suite], counters=True, profile=False)
    assert not needs_perf([probe, kfunc], counters=True, profile=False)  # they count by themselves
    assert not needs_perf([suite], counters=False, profile=False)
    assert _arguments(target_factory([probe], perf=True))["suite_tools"] == ("perf",)
