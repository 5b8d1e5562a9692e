"""Pick the target a command asked for: the running kernel or a kernel in qemu."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kbench.targets.base import Target
from kbench.targets.local import LocalTarget

VM_CPUS = 2
"""CPUs of a guest booted by ``make_target`` (the VmTarget default)."""


@contextmanager
def make_target(
    kernel: str | None, modules: Sequence[Path] = (), *, local_kernel: bool = False, suite_tools: Sequence[str] = (),
    with_module: bool = True, module_suffixes: Sequence[str | None] = (), count_instructions: bool = False,
    cwd: Path | None = None,
) -> Iterator[Target]:
    """``None`` or ``local``: this kernel. Anything else: a VmTarget, powered off on exit.

    ``modules``: user benchmark modules (sources or .ko) to load next to kbench.ko.
    ``local_kernel``: the user agreed that kfunc benchmarks load kbench.ko into the
    running kernel; without it they are refused there.
    ``suite_tools``: the executables of the suites that will run (``suite_tools()`` of
    ``kbench.targets.suite_runner``: their ``Benchmark.tools``), put into a guest's
    initramfs from its first boot.
    ``with_module``: build and load kbench.ko in a guest (not needed when only suites run).
    ``module_suffixes``: per module, build it under its name + that suffix (its benchmarks
    too; kbench.h's KBENCH_NAME_SUFFIX), so that two versions of one module load at once.
    ``count_instructions``: a guest boots under TCG with kbench's instruction-counting plugin
    (``targets.vm.plugin``); this kernel counts without it (valgrind or the PMU).
    ``cwd``: the directory runs on this kernel start in (a ``command``'s); None: this process's.
    """
    if kernel is None or kernel == "local":
        if modules:
            from kbench.targets.local_kmod import user_modules_loaded

            with user_modules_loaded(modules, module_suffixes, allowed=local_kernel) as registered:
                local = LocalTarget(load_modules=local_kernel, cwd=cwd)
                local.module_benchmarks = registered
                yield local
            return
        yield LocalTarget(load_modules=local_kernel, cwd=cwd)
        return
    from kbench.targets.vm_target import VmTarget

    with VmTarget(kernel, extra_modules=modules, cpus=VM_CPUS, suite_tools=suite_tools,
                  with_module=with_module or bool(modules), module_suffixes=module_suffixes,
                  count_instructions=count_instructions) as target:
        yield target


def target_cpus(kernel: str | None) -> list[int]:
    """The CPU numbers a run may be pinned to on that target (before it is started)."""
    if kernel is None or kernel == "local":
        return sorted(os.sched_getaffinity(0))
    return list(range(VM_CPUS))
