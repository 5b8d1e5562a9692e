"""``kbench kmod``: benchmarks of your own in kernel context (kbench.h API)."""

from __future__ import annotations

from pathlib import Path

import click

from kbench import exit_codes
from kbench.cli.console import echo_literal
from kbench.cli.main import fail, user_errors
from kbench.kmodtools.scaffold import ScaffoldError, scaffold_module


@click.group("kmod")
def kmod_group() -> None:
    """Write, build and run your own in-kernel benchmarks (see kmod/include/kbench.h)."""


@kmod_group.command("new")
@click.argument("name")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Where to write NAME.c.")
def new_cmd(name: str, directory: Path) -> None:
    """Write NAME.c: a module registering benchmark kfunc.NAME, ready to edit."""
    try:
        source = scaffold_module(name, directory)
    except ScaffoldError as exc:
        fail(str(exc), exit_codes.USAGE)
    echo_literal(f"wrote {source}")
    echo_literal(f"run it:  kbench run kfunc.{name} --kernel deb:6.1.0-56-amd64 --module {source}")


@kmod_group.command("build")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--kernel", required=True, metavar="SPEC", help="deb:<release>, a bzImage or a kernel build tree.")
def build_cmd(source: Path, kernel: str) -> None:
    """Build SOURCE (NAME.c or a module directory) for a kernel; prints the .ko path."""
    from kbench.targets.base import TargetError
    from kbench.targets.vm import VmTargetError, build_user_module, default_cache_dir, resolve_kernel

    with user_errors():
        cache = default_cache_dir()
        try:
            image = resolve_kernel(kernel, cache)
            ko = build_user_module(source, image, cache)
        except VmTargetError as exc:
            raise TargetError(str(exc)) from exc
    echo_literal(str(ko))
