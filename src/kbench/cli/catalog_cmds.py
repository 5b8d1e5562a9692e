"""``kbench list``: the catalog of benchmarks."""

from __future__ import annotations

import fnmatch

import click
from rich.table import Table

from kbench import exit_codes
from kbench.catalog.benchmarks import all_benchmarks
from kbench.cli.main import emit_json, fail, literal, out_console, user_errors
from kbench.kinds.base import Kind
from kbench.kinds.registry import kind_of

GLOB_CHARACTERS = frozenset("*?[")


def matches(pattern: str | None, name: str) -> bool:
    """``pattern`` is a glob when it has one of ``*?[`` (``syscall.*``), else a piece of the name
    (``pipe``); case is ignored."""
    if pattern is None:
        return True
    pattern, name = pattern.lower(), name.lower()
    if GLOB_CHARACTERS & set(pattern):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern in name


@click.command("list")
@click.argument("pattern", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON.")
def list_cmd(pattern: str | None, as_json: bool) -> None:
    """List the benchmarks, their parameters, units and directions.

    PATTERN keeps the benchmarks whose name matches it: a glob (syscall.*, *pipe*) or, without
    * ? or [, a piece of the name (hackbench).
    """
    with user_errors():
        benches = {name: b for name, b in all_benchmarks().items() if matches(pattern, name)}
    if not benches and pattern is not None:
        fail(f"no benchmark matches {pattern!r} (`kbench list` shows them all)", exit_codes.USAGE)
    if as_json:
        emit_json(
            [
                {
                    "name": b.name,
                    "kind": b.kind,
                    "description": b.description,
                    "metric": b.metric,
                    "unit": b.unit,
                    "direction": b.direction,
                    "params": [vars(p) for p in b.params],
                    **({"unavailable": b.unavailable} if b.unavailable else {}),
                }
                for b in benches.values()
            ]
        )
        return
    table = Table(show_lines=False, box=None, pad_edge=False)
    table.add_column("benchmark", style="bold")
    table.add_column("unit")
    table.add_column("direction")
    table.add_column("what it times")
    table.add_column("parameters (default)")
    kinds = list(dict.fromkeys(kind_of(bench) for bench in benches.values()))
    for bench in benches.values():
        shared = {p.name for p in kind_of(bench).shared_params}
        own = [p for p in bench.params if p.name not in shared]
        params = ", ".join(f"{p.name}={p.default}" for p in own) or "-"
        what = f"NOT AVAILABLE here: {bench.unavailable} ({bench.description})" if bench.unavailable \
            else bench.description
        table.add_row(literal(bench.name), bench.unit, bench.direction, literal(what), literal(params))
    console = out_console()
    console.print(table)
    for kind in kinds:
        if kind.shared_params:
            console.print(_shared_params_note(kind), highlight=False)


def _shared_params_note(kind: Kind) -> str:
    """What every benchmark of ``kind`` also takes (listed once, not in each row)."""
    note = f"\n{kind.name}.* benchmarks also take: " + ", ".join(f"{p.name}={p.default}" for p in kind.shared_params)
    if kind.in_kernel:
        note += "\n(they run inside a kernel: add --kernel deb:<release> to boot one in qemu)"
    return note
