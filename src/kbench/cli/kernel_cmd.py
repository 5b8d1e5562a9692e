"""``kbench kernel build``: build a kernel from source (or find it built) the way a ``tree:``
kernel spec does, and say where it is."""

from __future__ import annotations

from pathlib import Path

import click

from kbench.cli.main import emit_json, literal, out_console, user_errors

FEATURE_NAMES = ("trace", "suites")


@click.group("kernel")
def kernel_group() -> None:
    """Kernels kbench builds from source (the tree:PATH[@REV] kernel spec builds them too)."""


@kernel_group.command("build")
@click.argument("tree", required=False, default=".", type=click.Path(file_okay=False, path_type=Path))
@click.option("--rev", metavar="REV", help="Build this commit of the git repository TREE (the tree's checkout "
              "is not touched). Without it, TREE is built as it stands.")
@click.option("--config", "config", default="minimal", show_default=True,
              metavar="minimal|defconfig|deb:RELEASE|FILE",
              help="The base config: minimal (tinyconfig + kvm_guest.config), the tree's defconfig, Debian's "
                   "config of RELEASE, or a config file. kbench's own options are merged on top.")
@click.option("--fragment", "fragments", multiple=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="A config fragment merged last, in order (later ones win), as merge_config.sh does. Repeatable.")
@click.option("--for", "features", multiple=True, type=click.Choice(FEATURE_NAMES),
              help="Also configure for kbench trace (function tracer) or whole tools in a guest (suites). "
                   "Repeatable; a probe's and kbench.ko's needs are always in.")
@click.option("--json", "as_json", is_flag=True, help="Print the built kernel as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="Print the bzImage's path only; no progress.")
def build_cmd(tree: Path, rev: str | None, config: str, fragments: tuple[Path, ...], features: tuple[str, ...],
              as_json: bool, quiet: bool) -> None:
    """Build the kernel of TREE out of tree, in kbench's own build directory, or find it in
    kbench's cache of built kernels (keyed by the tree's content, the config and the compiler).
    Progress on a terminal; the log is kept; on a compile error, its first line is shown.

    \b
    Example:
      kbench kernel build ~/linux --rev HEAD~1 --fragment debug.config
      kbench run syscall.getppid --kernel tree:~/linux@HEAD~1
    """
    from kbench.cachefiles import default_cache_dir
    from kbench.cli.console import err_console
    from kbench.cli.progress import BuildSteps, LongWork
    from kbench.kernels.build import build_kernel
    from kbench.kernels.requirements import DEFAULT_FEATURES
    from kbench.targets.vm.tree import kernel_recipe

    if as_json and quiet:
        raise click.UsageError("give --quiet or --json, not both")
    cache_dir = default_cache_dir()
    with user_errors(), LongWork("looking the kernel up", unit="objects", quiet=quiet or as_json) as work:
        recipe = kernel_recipe(config, fragments, {*DEFAULT_FEATURES, *features}, cache_dir)
        built = build_kernel(tree, rev, recipe, cache_dir=cache_dir, progress=BuildSteps(work))
    for warning in built.warnings:
        err_console.print(literal(f"warning: {warning}"), highlight=False)
    if as_json:
        emit_json(built.to_json())
        return
    console = out_console()
    if quiet:
        console.print(literal(str(built.image)), highlight=False, soft_wrap=True)
        return
    where = f" at {built.commit[:12]} ({built.rev})" if built.commit else ""
    took = built.durations
    how = (f"found in the cache in {built.lookup_s:.2f} s (built {built.built_at[:16].replace('T', ' ')} UTC "
           f"in {_minutes(took.get('total', 0))})" if built.from_cache
           else f"built in {_minutes(took.get('total', 0))} "
                f"(configure {took.get('configure', 0):.0f} s, make {took.get('build', 0):.0f} s)")
    console.print(literal(f"kernel {built.release} of {built.tree}{where}: {how}"), highlight=False)
    for name, value in (("image", built.image), ("config", f"{built.recipe}; digest {built.config_digest[:12]}"),
                        ("modules", built.modules_dir or "none"), ("kbuild", built.kbuild_dir),
                        ("build dir", built.build_dir), ("log", built.log)):
        console.print(literal(f"  {name:<10} {value}"), highlight=False, soft_wrap=True)
    console.print(literal(f"boot it:  kbench run syscall.getppid --kernel tree:{built.tree}"
                          f"{'@' + built.rev if built.rev else ''}"), highlight=False, soft_wrap=True)


def _minutes(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 60 else f"{int(seconds // 60)} min {seconds % 60:02.0f} s"
