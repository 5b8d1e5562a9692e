"""``--module``: the user's own benchmark modules as the sides of ``compare`` and ``sensitivity``."""

from __future__ import annotations

from pathlib import Path

import click

from kbench.engine import compare_spec
from kbench.engine.compare_spec import DEFAULT_COPIES, MAX_COPIES, ONE_COPY_WARNING, BadCombination

__all__ = ["COPIES_HELP", "DEFAULT_COPIES", "LOCAL_KERNEL_HELP", "MAX_COPIES", "MODULE_HELP", "ONE_COPY_WARNING",
           "check_module_sides", "module_copy_count"]

MODULE_HELP = ("A benchmark module of your own (NAME.c or a module directory), built and loaded next to "
               "kbench.ko in the --kernel (or, with --local-kernel, this kernel). Once: vary its benchmark's "
               "parameter with '|'. Twice or more: each module is a side, built under a name of its own so that "
               "all load at once.")
LOCAL_KERNEL_HELP = ("In-kernel benchmarks without --kernel: build kbench.ko (and --module's) and load them into "
                     "the running kernel.")
COPIES_HELP = (f"With --module twice or more: load each module this many times, each copy at an address of its "
               f"own, and judge the modules on their copies, so that where the code landed is not taken for a "
               f"difference between them (default {DEFAULT_COPIES} for .c files, 1 for a .ko or a module "
               f"directory, whose name is fixed; at most {MAX_COPIES}).")


def check_module_sides(kernels: tuple[str, ...], other_sides: bool, local_kernel: bool, trials_design: bool) -> None:
    """UsageError unless the modules can be the sides (``kbench.engine.compare_spec.check_module_sides``)."""
    try:
        compare_spec.check_module_sides(kernels, other_sides, local_kernel, trials_design)
    except BadCombination as refused:
        raise click.UsageError(str(refused)) from None


def module_copy_count(modules: tuple[Path, ...], copies: int | None) -> int:
    """The copies of each module to load (``--copies``, or its default); UsageError where it cannot apply."""
    try:
        return compare_spec.module_copy_count(modules, copies)
    except BadCombination as refused:
        raise click.UsageError(str(refused)) from None
