"""``kbench cache``: what kbench keeps in its cache directory, and pruning it."""

from __future__ import annotations

import click

from kbench.cli.main import emit_json, literal, out_console
from kbench.cli.parsing import Duration


@click.group("cache")
def cache_group() -> None:
    """kbench's cache of kernels, modules and boot images ($KBENCH_CACHE_DIR, ~/.cache/kbench)."""


@cache_group.command("prune")
@click.option("--older-than", type=Duration(), metavar="DURATION",
              help="Also remove complete entries not used for this long (e.g. 30d).")
@click.option("--all", "everything", is_flag=True, help="Remove every entry (they are made again when needed).")
@click.option("--dry-run", is_flag=True, help="Say what would go; remove nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def prune_cmd(older_than: float | None, everything: bool, dry_run: bool, as_json: bool) -> None:
    """Remove stale lock files, half-written files and unfinished entries; with
    --older-than or --all also complete entries. Entries in use are kept."""
    from kbench.cachefiles import default_cache_dir
    from kbench.targets.vm.prune import prune_cache

    cache_dir = default_cache_dir()
    report = prune_cache(cache_dir, older_than_s=older_than, everything=everything, dry_run=dry_run)
    if as_json:
        emit_json({"cache_dir": str(cache_dir), "dry_run": dry_run, "freed_bytes": report.freed,
                   "kept": report.kept, "removed": [vars(item) for item in report.removed]})
        return
    console = out_console()
    verb = "would remove" if dry_run else "removed"
    for item in report.removed:
        console.print(literal(f"{verb} {item.path} ({format_bytes(item.bytes)}): {item.why}"), highlight=False)
    console.print(literal(f"{cache_dir}: {verb} {len(report.removed)} item(s), {format_bytes(report.freed)}; "
                          f"kept {report.kept} entr{'y' if report.kept == 1 else 'ies'}"), highlight=False)


def format_bytes(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
