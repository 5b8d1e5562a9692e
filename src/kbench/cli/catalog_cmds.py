"""``kbench list``: the catalog of benchmarks."""

from __future__ import annotations

import click
from rich.table import Table

from kbench.catalog.benchmarks import all_benchmarks
from kbench.cli.main import emit_json, out_console, user_errors
from kbench.kinds.kfunc.catalog import COMMON_PARAMS


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the catalog as JSON.")
def list_cmd(as_json: bool) -> None:
    """List the benchmarks, their parameters, units and directions."""
    with user_errors():
        benches = all_benchmarks()
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
                }
                for b in benches.values()
            ]
        )
        return
    table = Table(show_lines=False, box=None, pad_edge=False)
    table.add_column("benchmark", style="bold")
    table.add_column("what it times")
    table.add_column("parameters (default)")
    common = {p.name for p in COMMON_PARAMS}
    for bench in benches.values():
        own = [p for p in bench.params if not (bench.kind == "kfunc" and p.name in common)]
        params = ", ".join(f"{p.name}={p.default}" for p in own) or "-"
        table.add_row(bench.name, bench.description, params)
    console = out_console()
    console.print(table)
    console.print(
        "\nkfunc.* benchmarks also take: " + ", ".join(f"{p.name}={p.default}" for p in COMMON_PARAMS)
        + "\n(they run inside a kernel: add --kernel deb:<release> to boot one in qemu)",
        highlight=False,
    )
