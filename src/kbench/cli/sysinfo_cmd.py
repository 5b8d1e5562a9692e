"""``kbench sysinfo``: the machine inventory and the noise checklist."""

from __future__ import annotations

import click
from rich.table import Table
from rich.text import Text

from kbench.cli.main import emit_json, out_console
from kbench.sysinfo.checklist import NOISY, OK, noise_checklist
from kbench.sysinfo.collect import collect_sysinfo


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
        table.add_row(item.name, Text(item.state, style=style), item.value, item.advice)
    console.print()
    console.print(table, highlight=False)
