"""What a comparison compares: its sides, the design that measures them, and its margin.

Sides come in three kinds, one per comparison:
- commands (``--command A --command B``): the ``command`` benchmark, one side per command line;
- kernels (``--kernel A --kernel B BENCH``): one benchmark in each kernel;
- parameter values (``BENCH -p loops=99|100``, optionally in one ``--kernel``): one
  benchmark, one side per value of the one parameter written with ``|``.

Design: "interleaved" (``kbench.engine.interleaved``) when every side runs on one target
and a slot is cheap (commands, syscalls, in-kernel functions); "trials"
(``kbench.engine.compare_protocol``) when the sides need their own kernels (a boot per
block of trials) or a run is a whole tool. ``auto`` picks the first that applies.

Margin (``kbench.engine.compare.default_margin``): ``--margin`` if given; else the
``margin_pct`` of the newest ``kbench calibrate`` of the base side (same benchmark, target and
parameters); else, for the interleaved design, measured from the comparison's own blocks
(``kbench.compare.noise_margin``), and for the trials design ``DEFAULT_MARGIN``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kbench.catalog.benchmarks import lookup
from kbench.compare.placement import copy_label
from kbench.contract.benchmark import Benchmark
from kbench.contract.request import BadRequest, RunRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.compare_spec import ALTERNATIVES, AUTO, DESIGNS, INTERLEAVED, TRIALS
from kbench.engine.interleaved import supports_interleaving
from kbench.targets.transport import Transport

if TYPE_CHECKING:
    pass

__all__ = ["ALTERNATIVES", "AUTO", "DESIGNS", "INTERLEAVED", "TRIALS", "Sides", "build_sides", "check_module_params",
           "choose_design", "module_comparison", "module_sides"]


@dataclass(frozen=True)
class Sides:
    sides: list[ComparisonSide]
    label_kind: str  # "program", "kernel", "configuration" or "module"
    title: str
    builds: tuple[str, ...] = ()
    """With copies of each module (``module_sides``): the modules' labels; else empty."""
    build_of: tuple[int, ...] = ()
    """With copies: per side, the index of its module in ``builds``."""


def _varying(params: dict[str, str]) -> tuple[str, list[str]] | None:
    varying = {name: value.split(ALTERNATIVES) for name, value in params.items() if ALTERNATIVES in value}
    if not varying:
        return None
    if len(varying) > 1:
        raise BadRequest(f"only one parameter may list values with '|'; got {', '.join(sorted(varying))}")
    name, values = next(iter(varying.items()))
    if any(not v for v in values) or len(values) < 2:
        raise BadRequest(f"-p {name}={params[name]}: give two or more non-empty values separated by '|'")
    if len(set(values)) != len(values):
        raise BadRequest(f"-p {name}={params[name]}: a value is listed twice; to measure A/A noise use "
                         "`kbench calibrate`")
    return name, values


def build_sides(
    benchmark: str | None, kernels: tuple[str, ...], commands: tuple[str, ...], params: dict[str, str],
    samples: int | None,
) -> Sides:
    """The sides of a measured comparison (module docstring); BadRequest names what is wrong."""
    varying = _varying(params)
    if commands:
        if benchmark:
            raise BadRequest("--command compares commands: give no BENCHMARK")
        if varying is not None:
            raise BadRequest("--command sides cannot also vary a parameter with '|'")
        if len(commands) < 2:
            raise BadRequest("a comparison needs at least two sides: give --command twice or more")
        if len(set(commands)) != len(commands):
            raise BadRequest("two --command sides are identical; to measure A/A noise use `kbench calibrate`")
        bench = lookup("command")
        bench.validate_params({k: v for k, v in params.items() if k != "cmd"})
        sides = [ComparisonSide(label=cmd, kernel=None, benchmark=bench,
                                request=RunRequest(benchmark=bench.name, params={**params, "cmd": cmd},
                                                   samples=samples))
                 for cmd in commands]
        return Sides(sides, "program", bench.name)
    if not benchmark:
        raise BadRequest("give a BENCHMARK to run on each side (or --command twice)")
    bench = lookup(benchmark)
    if varying is not None:
        if len(kernels) > 1:
            raise BadRequest("vary either the kernel (--kernel twice) or one parameter ('|'), not both")
        kernel = kernels[0] if kernels else None
        return Sides(_value_sides(bench, params, varying, kernel, samples), "configuration", bench.name)
    bench.validate_params(params)
    if len(kernels) < 2:
        raise BadRequest("a comparison needs at least two sides: --kernel twice or more, or one parameter with "
                         "values separated by '|' (e.g. -p size=64|128)")
    if len(set(kernels)) != len(kernels):
        raise BadRequest("two --kernel sides are identical; to measure A/A noise use `kbench calibrate`")
    sides = [ComparisonSide(label=spec.removeprefix("deb:"), kernel=spec, benchmark=bench,
                            request=RunRequest(benchmark=bench.name, params=params, samples=samples))
             for spec in kernels]
    return Sides(sides, "kernel", bench.name)


def check_module_params(modules: Sequence[Path], params: dict[str, str]) -> tuple[str, list[str]] | None:
    """What ``module_sides`` can refuse before anything is built or booted: one module needs one
    parameter varied with '|', two or more are the sides themselves. The varied parameter, if any."""
    varying = _varying(params)
    if len(modules) == 1 and varying is None:
        raise BadRequest("with one --module, vary one parameter with '|' (e.g. -p 'work=2000|2020'), or give "
                         "--module twice to compare two versions of the module")
    if len(modules) > 1 and varying is not None:
        raise BadRequest("with --module twice or more the modules are the sides: vary no parameter with '|'")
    return varying


def module_sides(
    target: Transport, modules: Sequence[Path], benchmark: str | None, params: dict[str, str], samples: int | None,
    copies: int = 1,
) -> Sides:
    """The sides of a comparison of the user's own modules, loaded on ``target`` (``--module``):

    - one module and one parameter varied with '|': its benchmark (``benchmark``, or the one it
      registered), one side per value;
    - two or more modules (each built under a name of its own, ``module_suffixes``): one side per
      module, its benchmark (``benchmark`` + its suffix, or the one it registered), all under one
      metric named after the benchmark without the suffix;
    - with ``copies`` > 1, one side per copy of each module, loaded as ``module_copies`` orders
      them and labelled ``FILE#COPY``; ``builds`` and ``build_of`` group them.
    BadRequest names what is wrong."""
    from kbench.kinds.kfunc.loaded import loaded_benchmark, module_copies, registered_by

    varying = check_module_params(modules, params)
    wanted = benchmark.removeprefix("kfunc.") if benchmark else None
    if len(modules) == 1:
        assert varying is not None
        name = wanted or _only_benchmark(registered_by(target, 0), modules[0])
        bench = loaded_benchmark(target, f"kfunc.{name}")
        return Sides(_value_sides(bench, params, varying, None, samples), "configuration", bench.name)
    loaded, suffixes = module_copies(modules, copies)
    labels = _module_labels(modules)
    sides = []
    common = None
    for index, (module, suffix) in enumerate(zip(loaded, suffixes, strict=True)):
        found = registered_by(target, index)
        name = f"{wanted}{suffix or ''}" if wanted else _only_benchmark(found, module)
        if wanted and name not in found:
            raise BadRequest(f"{module} registered no benchmark {wanted} (as {name}); it registered: "
                             + (", ".join(found) or "none"))
        base = name.removesuffix(suffix or "")
        common = common or base
        if base != common:
            raise BadRequest(f"the modules register different benchmarks ({common}, {base}): give the one to "
                             "compare as BENCHMARK")
        bench = loaded_benchmark(target, f"kfunc.{name}")
        bench = replace(bench, metric=f"kfunc.{base}.cycles")
        bench.validate_params(params)
        build = index % len(modules)
        label = labels[build] if copies == 1 else copy_label(labels[build], index // len(modules) + 1)
        sides.append(ComparisonSide(label=label, kernel=None, benchmark=bench,
                                    request=RunRequest(benchmark=bench.name, params=dict(params), samples=samples)))
    if copies == 1:
        return Sides(sides, "module", f"kfunc.{common}")
    return Sides(sides, "module", f"kfunc.{common}", tuple(labels),
                 tuple(index % len(modules) for index in range(len(sides))))


@contextmanager
def module_comparison(
    kernel: str | None, modules: Sequence[Path], benchmark: str | None, params: dict[str, str], samples: int | None,
    *, copies: int = 1, local_kernel: bool = False, suite_tools: Sequence[str] = (), count_instructions: bool = False,
) -> Iterator[tuple[Transport, Sides]]:
    """The user's modules loaded (``copies`` of each, ``module_copies``) in ``kernel`` (None: this
    one, with ``local_kernel``), and the sides of their comparison (``module_sides``) set to run there."""
    from kbench.kinds.kfunc.loaded import module_copies
    from kbench.targets.factory import make_target

    check_module_params(modules, params)
    loaded, suffixes = module_copies(modules, copies)
    with make_target(kernel, loaded, local_kernel=local_kernel, module_suffixes=suffixes,
                     suite_tools=suite_tools, count_instructions=count_instructions) as target:
        if not isinstance(target, Transport):
            raise BadRequest(f"{kernel or 'this kernel'} cannot load benchmark modules")
        found = module_sides(target, modules, benchmark, params, samples, copies)
        yield target, replace(found, sides=[replace(side, kernel=kernel) for side in found.sides])


def _value_sides(bench: Benchmark, params: dict[str, str], varying: tuple[str, list[str]], kernel: str | None,
                 samples: int | None) -> list[ComparisonSide]:
    """One side per value of the parameter varied with '|', labelled ``name=value`` (each side's
    parameters validated)."""
    name, values = varying
    sides = []
    for value in values:
        side_params = {**params, name: value}
        bench.validate_params(side_params)
        sides.append(ComparisonSide(label=f"{name}={value}", kernel=kernel, benchmark=bench,
                                    request=RunRequest(benchmark=bench.name, params=side_params, samples=samples)))
    return sides


def _only_benchmark(found: list[str], module: Path) -> str:
    if len(found) != 1:
        raise BadRequest(f"{module} registered {len(found)} benchmarks ({', '.join(found) or 'none'}): give the one "
                         "to compare as BENCHMARK (kfunc.NAME)")
    return found[0]


def _module_labels(modules: Sequence[Path]) -> list[str]:
    """The modules' file names, or their paths where two file names are alike."""
    names = [Path(m).name for m in modules]
    if len(set(names)) == len(names):
        return names
    return [str(m) for m in modules]


def choose_design(requested: str, sides: list[ComparisonSide]) -> str:
    """INTERLEAVED or TRIALS for ``requested`` (AUTO, INTERLEAVED or TRIALS)."""
    why_not = supports_interleaving(sides)
    if requested == INTERLEAVED and why_not is not None:
        raise BadRequest(f"--design interleaved: {why_not}; use --design trials")
    if requested == TRIALS:
        return TRIALS
    return INTERLEAVED if why_not is None else TRIALS
