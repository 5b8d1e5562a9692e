"""What can be measured: every benchmark of every kind by name, with did-you-mean.

Each kind lists its own benchmarks (``kbench.kinds``): the probe's workloads from
``kbench-probe --list``, kbench.ko's from its sources, will-it-scale's testcases from
``kbench-probe --list-scale``, and the suites' tests.
"""

from __future__ import annotations

from collections.abc import Mapping

# Re-exported until every importer takes them from kbench.contract (docs/architecture.md).
from kbench.contract.benchmark import BadParameter as BadParameter
from kbench.contract.benchmark import Benchmark as Benchmark
from kbench.contract.benchmark import ParamSpec as ParamSpec
from kbench.contract.benchmark import UnknownBenchmark as UnknownBenchmark
from kbench.contract.suggest import did_you_mean
from kbench.contract.vocabulary import HIGHER_IS_BETTER as HIGHER_IS_BETTER
from kbench.contract.vocabulary import LOWER_IS_BETTER as LOWER_IS_BETTER
from kbench.kinds.registry import kind_named, kinds


def all_benchmarks() -> dict[str, Benchmark]:
    """Every benchmark of every kind, by name, in the kinds' order."""
    return {bench.name: bench for kind in kinds() for bench in kind.benchmarks()}


def primary_metric(benchmark: Benchmark, params: Mapping[str, str]) -> str:
    """The metric a run of ``benchmark`` with ``params`` is stored under (its kind decides)."""
    return kind_named(benchmark.kind).primary_metric(benchmark, params)


def find_benchmark(name: str) -> Benchmark | None:
    """The benchmark called ``name`` exactly, or None. The kinds are asked in order and the
    first that has it answers, so that a name of the probe's reads no kbench.ko sources."""
    for kind in kinds():
        for bench in kind.benchmarks():
            if bench.name == name:
                return bench
    return None


def lookup(name: str) -> Benchmark:
    """The benchmark called ``name``; UnknownBenchmark with suggestions otherwise."""
    found = find_benchmark(name)
    if found is not None:
        return found
    benches = all_benchmarks()
    # Accept a bare workload name as a convenience ("getppid" for "syscall.getppid").
    for prefix in ("syscall.", "kfunc.", "will-it-scale."):
        if prefix + name in benches:
            return benches[prefix + name]
    hint = did_you_mean(name, list(benches))
    raise UnknownBenchmark(f"unknown benchmark {name!r}{hint}; `kbench list` shows them all")
