"""kfunc benchmarks of the kbench.ko loaded in a kernel, read from its sysfs files.

A module of one's own registers benchmarks at run time; their catalog entries come from
``/sys/kernel/kbench/<bench>/`` (docs/sysfs-ABI.md) plus the parameters all kfunc
benchmarks take (``catalog.COMMON_PARAMS``).
"""

from __future__ import annotations

from kbench.contract.benchmark import Benchmark, ParamSpec, UnknownBenchmark
from kbench.contract.vocabulary import LOWER_IS_BETTER
from kbench.kinds.kfunc.catalog import COMMON_PARAMS, NAME
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule, parse_key_values
from kbench.targets.transport import Transport


def describe(module: KbenchModule, bench: str) -> Benchmark:
    """A catalog entry for a bench registered at run time (e.g. by a user module)."""
    loaded = module.benchmarks()
    if bench not in loaded:
        raise UnknownBenchmark(
            f"no benchmark kfunc.{bench} in this kernel; loaded: " + ", ".join(f"kfunc.{name}" for name in loaded)
        )
    directory = f"{SYSFS_ROOT}/{bench}"
    params = []
    for line in module.io.read_text(f"{directory}/params").splitlines():
        head, _, description = line.partition(" description=")
        fields = parse_key_values(head)
        kind = "int" if fields.get("type") == "u64" else "str"
        params.append(ParamSpec(fields["name"], kind, fields.get("value", ""), description.strip()))
    return Benchmark(
        name=f"kfunc.{bench}",
        kind=NAME,
        workload=bench,
        description=module.io.read_text(f"{directory}/description").strip(),
        unit="cycles",
        metric=f"kfunc.{bench}.cycles",
        direction=LOWER_IS_BETTER,
        params=(*params, *COMMON_PARAMS),
    )


def loaded_benchmark(target: Transport, name: str) -> Benchmark:
    """``kfunc.NAME`` as the kbench.ko loaded on ``target`` (with user modules) describes it."""
    with target.kbench_module(name) as module:
        return describe(module, name.removeprefix("kfunc."))
