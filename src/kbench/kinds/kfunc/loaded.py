"""kfunc benchmarks of the kbench.ko loaded in a kernel, read from its sysfs files.

A module of one's own registers benchmarks at run time; their catalog entries come from
``/sys/kernel/kbench/<bench>/`` (docs/sysfs-ABI.md) plus the parameters all kfunc
benchmarks take (``catalog.COMMON_PARAMS``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from kbench.contract.benchmark import Benchmark, ParamSpec, UnknownBenchmark
from kbench.contract.vocabulary import LOWER_IS_BETTER
from kbench.kinds.kfunc.catalog import COMMON_PARAMS, NAME
from kbench.targets.key_values import parse_key_values
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule
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


@runtime_checkable
class LoadsModules(Protocol):
    """A target that loaded modules of the user's own next to kbench.ko (``--module``)."""

    module_benchmarks: list[list[str]]
    """Per module, in the order given: the benchmarks it registered."""


def module_suffixes(modules: Sequence[Path]) -> list[str | None]:
    """The name suffix each module is built with so that all of them load at once (kbench.h,
    KBENCH_NAME_SUFFIX): none for a single module; else ``_<file stem>`` (lower case, other
    characters as ``_``, at most 12), or ``_1``, ``_2``, ... when two stems are alike."""
    if len(modules) < 2:
        return [None] * len(modules)
    stems = [re.sub(r"[^a-z0-9_]", "_", Path(m).stem.lower())[:12] for m in modules]
    if len(set(stems)) == len(stems) and all(stems):
        return [f"_{stem}" for stem in stems]
    return [f"_{index}" for index in range(1, len(modules) + 1)]


def can_copy(module: Path) -> bool:
    """Whether ``module`` can be loaded more than once: a source file, built under a name per copy
    (a .ko's or a module directory's name is fixed by its build)."""
    return Path(module).suffix == ".c"


def module_copies(modules: Sequence[Path], copies: int) -> tuple[list[Path], list[str | None]]:
    """The modules to build and load for ``copies`` copies of each, and their name suffixes
    (``module_suffixes`` + ``_<copy>``). Load order: the first copy of every module, then the
    second, ..., so that no build is always loaded first."""
    if copies < 1:
        raise ValueError(f"copies must be at least 1, got {copies}")
    suffixes = module_suffixes(modules)
    if copies == 1:
        return list(modules), suffixes
    paths: list[Path] = []
    named: list[str | None] = []
    for copy in range(1, copies + 1):
        for module, suffix in zip(modules, suffixes, strict=True):
            paths.append(Path(module))
            named.append(f"{suffix or ''}_{copy}")
    return paths, named


def registered_by(target: object, module: int) -> list[str]:
    """The benchmarks the ``module``-th user module registered on ``target`` (none if it loaded none)."""
    if isinstance(target, LoadsModules) and module < len(target.module_benchmarks):
        return list(target.module_benchmarks[module])
    return []
