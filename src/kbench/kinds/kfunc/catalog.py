"""The kfunc catalog: kbench.ko's built-in benchmarks (kmod/benches/*.c) and the parameters all take.

They are read from the module's own sources (``source``): ``benches/list.h`` names them
and each bench file declares its description and parameters. A VM test compares the
result with what the loaded module reports in /sys/kernel/kbench/<bench>/.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from kbench.contract.benchmark import Benchmark, ParamSpec, UnknownBenchmark
from kbench.contract.vocabulary import LOWER_IS_BETTER
from kbench.kinds.kfunc.source import KmodParam, builtin_benches
from kbench.resources import find_resource
from kbench.targets.kmod_sysfs import KBENCH_ONLY_PARAMS as DRIVER_PARAMS

NAME = "kfunc"

COMMON_PARAMS: tuple[ParamSpec, ...] = (
    ParamSpec("irqs_off", "bool", "0", "take samples with local interrupts disabled"),
    ParamSpec("preempt_off", "bool", "0", "take samples with preemption disabled"),
    ParamSpec("dataset_size", "int", "4096", "inputs are drawn from this many LCG values (1..2^20)"),
    ParamSpec("seed", "int", "1", "seed of the LCG that makes the input dataset"),
    ParamSpec("parallel", "bool", "0", "run on every CPU of `cpus` at once, behind a start barrier"),
    ParamSpec("cpus", "str", "all", "CPU list for parallel runs (e.g. 0-3,8)"),
)
"""Parameters every in-kernel benchmark accepts (module attributes, plus `parallel`)."""

KBENCH_ONLY_PARAMS = DRIVER_PARAMS
"""Parameters kbench interprets itself; they are not module attributes."""

PARAM_TYPES = {"u64": "int", "ipv4": "str", "ipv6": "str"}
"""kbench.ko's parameter types as catalog types (a prefix is given as text)."""


def param_spec(param: KmodParam) -> ParamSpec:
    return ParamSpec(param.name, PARAM_TYPES[param.type], param.default, param.description)


@cache
def kfunc_benchmarks() -> tuple[Benchmark, ...]:
    """Every built-in kbench.ko benchmark as ``kfunc.<bench>`` (metric ``….cycles``)."""
    return benchmarks_in(find_resource("kmod"))


def benchmarks_in(kmod_dir: Path) -> tuple[Benchmark, ...]:
    """The benchmarks of the kbench.ko sources in ``kmod_dir``."""
    return tuple(
        Benchmark(
            name=f"kfunc.{bench.name}",
            kind=NAME,
            workload=bench.name,
            description=bench.description,
            unit="cycles",
            metric=f"kfunc.{bench.name}.cycles",
            direction=LOWER_IS_BETTER,
            params=(*(param_spec(p) for p in bench.params), *COMMON_PARAMS),
        )
        for bench in builtin_benches(kmod_dir)
    )


def builtin_benchmark(name: str) -> Benchmark:
    """The built-in ``kfunc.<bench>`` called ``name``."""
    for bench in kfunc_benchmarks():
        if bench.name == name:
            return bench
    raise UnknownBenchmark(f"kbench.ko has no built-in benchmark {name!r}")
