"""``--module``: the user's own benchmark modules as the sides of ``compare`` and ``sensitivity``."""

from __future__ import annotations

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
