"""``kbench list`` and ``kbench sysinfo``."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from kbench.catalog.benchmarks import all_benchmarks
from kbench.catalog.kfunc import COMMON_PARAMS
from kbench.cli.main import emit_json, out_console, user_errors
from kbench.sysinfo.checklist import NOISY, OK, noise_checklist
from kbench.sysinfo.collect import collect_sysinfo


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


@click.command("sysinfo")
@click.option("--json", "as_json", is_flag=True, help="Print the inventory and the checklist as JSON.")
def sysinfo_cmd(as_json: bool) -> None:
    """Show the machine inventory and a checklist of the noise sources.

    \b
    Each item is ok, noisy, or not available here (with the reason), with one line
    of advice. `kbench tune` fixes governor, turbo and ASLR.
    """
    info = collect_sysinfo()
    checklist = noise_checklist(info)
    if as_json:
        emit_json({**info, "checklist": [item.to_dict() for item in checklist]})
        return
    console = out_console()
    cpu = info["cpu"]
    virt = info["virtualization"]
    memory = info["memory_bytes"]
    console.print(Text(f"host        {info['hostname']}"), highlight=False)
    console.print(Text(f"cpu         {cpu['model']} × {cpu['count']} (online {cpu['online']})"), highlight=False)
    console.print(Text(f"memory      {'?' if memory is None else f'{memory / 2**30:.1f} GiB'}"), highlight=False)
    console.print(Text(f"kernel      {info['kernel']['release']} {info['kernel']['version']}"), highlight=False)
    console.print(
        f"virtualized {'yes' if virt['virtualized'] else 'no'} (vm={virt['vm']}, container={virt['container']})",
        highlight=False,
    )
    flags = ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in cpu["tsc_flags"].items())
    console.print(f"tsc         {flags}", highlight=False)
    table = Table(box=None, pad_edge=False, title="noise checklist", title_justify="left")
    for column in ("item", "state", "value", "advice"):
        table.add_column(column)
    colour = {OK: "green", NOISY: "yellow"}
    for item in checklist:
        style = colour.get(item.state, "dim")
        table.add_row(item.name, f"[{style}]{item.state}[/]", item.value, item.advice)
    console.print()
    console.print(table, highlight=False)
