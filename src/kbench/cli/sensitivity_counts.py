"""``kbench sensitivity --metric instructions``: seed 004's table by counts (docs/instructions.md).

Every configuration counted (``engine.instructions``), then every pair judged on its counts
(``kbench.compare.counts.counts_matrix``): the exact change where the counts repeat, the
statistical verdict where they vary; the diagonal splits each configuration against itself.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from kbench.cli.main import Context, emit_json, err_console, out_console
from kbench.report.counted_run import count_text


def counts_sensitivity(
    ctx: Context, *, benchmark: str | None, kernels: tuple[str, ...], commands: tuple[str, ...],
    params: dict[str, str], modules: tuple[Path, ...], local_kernel: bool, samples: int | None, as_json: bool,
) -> None:
    from kbench.compare.counts import counts_matrix
    from kbench.contract.counts import NOT_TIME
    from kbench.engine.comparison_sides import build_sides, module_comparison
    from kbench.engine.instructions import counted_comparison

    with err_console.status("counting instructions") as status:
        def on_run(label: str, index: int) -> None:
            status.update(f"counting instructions: {label}, run {index + 1}")

        if modules:
            with module_comparison(kernels[0] if kernels else None, modules, benchmark, params, samples,
                                   local_kernel=local_kernel, count_instructions=True) as (target, found):
                outcome = counted_comparison(ctx.store, found.sides, target=target, on_run=on_run)
        else:
            found = build_sides(benchmark, kernels, commands, params, samples)
            outcome = counted_comparison(ctx.store, found.sides, local_kernel=local_kernel, on_run=on_run)
    why = str(outcome.source.get("varies") or "")
    matrix = counts_matrix([side.label for side in outcome.sides], [side.counts() for side in outcome.sides],
                           direction=outcome.sides[0].direction, why_varied=why)
    result: dict[str, Any] = {"metric": outcome.metric, "design": "counts", "test": "exact counts where they repeat",
                              "source": outcome.source, "runs": {s.label: s.run_ids for s in outcome.sides},
                              "seconds": round(outcome.seconds, 1), "note": NOT_TIME, **matrix.to_dict()}
    if as_json:
        emit_json(result)
        return
    console = out_console()
    console.print(Text.assemble(
        (outcome.metric, "bold"),
        f": counted by {outcome.source.get('tool', '?')}; cells: change of the column against the row, and the "
        "verdict (exact where the counts repeat); diagonal: each configuration's samples (or runs) even against "
        "odd, A/A"), highlight=False)
    table = Table(box=None, pad_edge=False)
    table.add_column("")
    table.add_column("per op", justify="right")
    for index, _ in enumerate(matrix.names):
        table.add_column(f"[{index}]", justify="right")
    for i, name in enumerate(matrix.names):
        cells = [_cell(float(matrix.change_pct[i, j]), matrix.verdicts[i][j], bool(matrix.exact[i, j]))
                 for j in range(len(matrix.names))]
        table.add_row(f"[{i}] {name}", count_text(matrix.counts[i]), *cells)
    console.print(table)
    console.print(Text(f"warning: {NOT_TIME}"), highlight=False)


def _cell(change: float, verdict: str, exact: bool) -> str:
    if not math.isfinite(change):
        return verdict
    if change == 0 and exact:
        return "0 (equal)"
    return f"{change:+.3f}% {verdict}{'' if exact else ' (varied)'}"
