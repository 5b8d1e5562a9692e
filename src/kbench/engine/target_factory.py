"""The targets runs of some benchmarks need: one factory for every command and fleet task that runs them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path

from kbench.contract.benchmark import Benchmark
from kbench.kinds.registry import kind_of
from kbench.targets.base import Target
from kbench.targets.factory import make_target
from kbench.targets.suite_runner import suite_tools

TargetFactory = Callable[[str | None], AbstractContextManager[Target]]
"""A target for a kernel spec (None or ``local``: this kernel), started and stopped by ``with``."""


def needs_perf(benchmarks: Iterable[Benchmark], *, counters: bool, profile: bool) -> bool:
    """Whether runs of ``benchmarks`` in a guest need perf there: any profile, or counters of a
    kind that counts through ``perf stat`` (a suite; the probe and kbench.ko count by themselves)."""
    return profile or (counters and any(kind_of(benchmark).counts_with_perf for benchmark in benchmarks))


def target_factory(
    benchmarks: Iterable[Benchmark], *, local_kernel: bool = False, perf: bool = False, cwd: Path | None = None,
) -> TargetFactory:
    """``make_target`` for runs of ``benchmarks``: a guest carries the executables their whole
    tools run (``suite_tools``; perf too when ``perf``, see ``needs_perf``) from its first boot,
    and builds kbench.ko unless only whole tools run; ``local_kernel`` and ``cwd`` (where runs on
    this kernel start: a fleet task's directory) as ``make_target`` takes them."""
    chosen = tuple(benchmarks)
    return functools.partial(make_target, local_kernel=local_kernel, suite_tools=suite_tools(chosen, perf=perf),
                             with_module=any(not kind_of(benchmark).whole_tool for benchmark in chosen), cwd=cwd)
