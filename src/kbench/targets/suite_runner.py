"""The host executables whole-tool benchmarks need in a guest (``Benchmark.tools``).

Running a suite is its kind's job (``kbench.kinds.suite.run``); a VM target only carries
the executables and their libraries into the guest's initramfs (``kbench.targets.vm.tools``).
"""

from __future__ import annotations

from collections.abc import Iterable

from kbench.contract.benchmark import Benchmark


def suite_tools(benchmarks: Iterable[Benchmark]) -> tuple[str, ...]:
    """The executables the suite benchmarks among ``benchmarks`` run (for a guest's initramfs)."""
    tools: list[str] = []
    for benchmark in benchmarks:
        tools.extend(tool for tool in benchmark.tools if tool not in tools)
    return tuple(tools)
