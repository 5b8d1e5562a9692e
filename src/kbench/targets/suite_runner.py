"""The host executables whole-tool benchmarks need in a guest (``Benchmark.tools``).

Running a suite is its kind's job (``kbench.kinds.suite.run``); a VM target only carries
the executables and their libraries into the guest's initramfs (``kbench.targets.vm.tools``).
"""

from __future__ import annotations

from collections.abc import Iterable

from kbench.contract.benchmark import Benchmark

PERF = "perf"
"""perf, carried into a guest for profiles and for a suite's counters (``perf stat``)."""


def suite_tools(benchmarks: Iterable[Benchmark], *, perf: bool = False) -> tuple[str, ...]:
    """The executables the suite benchmarks among ``benchmarks`` run (for a guest's initramfs);
    ``perf``: perf too (a profile, or a suite's counters, taken in the guest)."""
    tools: list[str] = []
    for benchmark in benchmarks:
        tools.extend(tool for tool in benchmark.tools if tool not in tools)
    if perf and PERF not in tools:
        tools.append(PERF)
    return tuple(tools)
