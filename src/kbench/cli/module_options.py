"""``--module``: the user's own benchmark modules as the sides of ``compare`` and ``sensitivity``."""

from __future__ import annotations

from pathlib import Path

import click

MODULE_HELP = ("A benchmark module of your own (NAME.c or a module directory), built and loaded next to "
               "kbench.ko in the --kernel (or, with --local-kernel, this kernel). Once: vary its benchmark's "
               "parameter with '|'. Twice or more: each module is a side, built under a name of its own so that "
               "all load at once.")
LOCAL_KERNEL_HELP = ("In-kernel benchmarks without --kernel: build kbench.ko (and --module's) and load them into "
                     "the running kernel.")


def check_module_sides(kernels: tuple[str, ...], other_sides: bool, local_kernel: bool, trials_design: bool) -> None:
    """UsageError unless the modules can be the sides: one kernel (booted or this one), no other
    kind of side, the interleaved design (the modules run in one kernel)."""
    if other_sides:
        raise click.UsageError("--module compares in-kernel benchmarks: give no --command or --runs")
    if len(kernels) > 1:
        raise click.UsageError("--module loads the modules into one kernel: give --kernel once")
    if not kernels and not local_kernel:
        raise click.UsageError("--module loads the modules into a kernel booted in qemu (--kernel SPEC), or with "
                               "--local-kernel into the running kernel")
    if trials_design:
        raise click.UsageError("--module sides run in one kernel: they are compared with the interleaved design")


DEFAULT_COPIES = 3
MAX_COPIES = 8
COPIES_HELP = (f"With --module twice or more: load each module this many times, each copy at an address of its "
               f"own, and judge the modules on their copies, so that where the code landed is not taken for a "
               f"difference between them (default {DEFAULT_COPIES} for .c files, 1 for a .ko or a module "
               f"directory, whose name is fixed; at most {MAX_COPIES}).")
ONE_COPY_WARNING = ("one copy of each module: the verdict does not include the spread between placements (two loads "
                    "of one build measured up to 2% apart under TCG, docs/PERFORMANCE.md 'Placement'); "
                    f"--copies {DEFAULT_COPIES} measures it")


def module_copy_count(modules: tuple[Path, ...], copies: int | None) -> int:
    """The copies of each module to load (``--copies``, or its default); UsageError where it cannot apply."""
    from kbench.kinds.kfunc.loaded import can_copy

    fixed = [str(m) for m in modules if not can_copy(m)]
    if copies is None:
        return DEFAULT_COPIES if len(modules) > 1 and not fixed else 1
    if copies > 1 and len(modules) < 2:
        raise click.UsageError("--copies applies to --module given twice or more (the builds compared)")
    if copies > 1 and fixed:
        raise click.UsageError(f"--copies {copies}: {', '.join(fixed)} cannot be loaded twice (a .ko's or a module "
                               "directory's name is fixed by its build); give the module as a .c file")
    return copies
