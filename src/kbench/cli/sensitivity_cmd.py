"""``kbench sensitivity``: which configurations can be told apart, and which A/A pairs look different."""

from __future__ import annotations

import click
from rich.table import Table

from kbench.catalog.benchmarks import lookup
from kbench.cli.main import Context, emit_json, out_console, pass_context, user_errors
from kbench.cli.parsing import KeyValue
from kbench.compare.sensitivity import sensitivity_matrix
from kbench.engine.compare_protocol import ComparisonSide, run_comparison
from kbench.engine.request import BadRequest, RunRequest
from kbench.targets.factory import make_target


@click.command("sensitivity")
@click.argument("benchmark", required=False)
@click.option("--command", "commands", multiple=True, metavar="CMD", help="A configuration per command line.")
@click.option("--kernel", "kernels", multiple=True, metavar="SPEC", help="A configuration per kernel (with BENCHMARK).")
@click.option("-p", "--param", "params", multiple=True, type=KeyValue())
@click.option("--samples", type=click.IntRange(min=1), help="Samples per trial.")
@click.option("--trials", type=click.IntRange(min=4), default=10, show_default=True,
              help="Trials per configuration (the diagonal compares its even and odd trials: A/A).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@pass_context
def sensitivity_cmd(
    ctx: Context, benchmark: str | None, commands: tuple[str, ...], kernels: tuple[str, ...],
    params: tuple[tuple[str, str], ...], samples: int | None, trials: int, seed: int, as_json: bool,
) -> None:
    """The matrix of Mann-Whitney and Kolmogorov-Smirnov p-values for every pair of
    configurations, A/A pairs on the diagonal: which method separates a small difference,
    and which reports differences that are not there."""
    with user_errors():
        if bool(commands) == bool(kernels) or len(commands or kernels) < 2:
            raise BadRequest("give two or more --command, or two or more --kernel with a BENCHMARK")
        if commands:
            bench = lookup("command")
            sides = [ComparisonSide(cmd, None, bench, RunRequest(bench.name, {**dict(params), "cmd": cmd},
                                                                  samples=samples or 20)) for cmd in commands]
        else:
            if not benchmark:
                raise BadRequest("--kernel configurations need a BENCHMARK")
            bench = lookup(benchmark)
            sides = [ComparisonSide(spec, spec, bench, RunRequest(bench.name, dict(params), samples=samples))
                     for spec in kernels]
        outcome = run_comparison(ctx.store, sides, make_target, max_trials=trials, adaptive=False, seed=seed,
                                 tags=("sensitivity",))
        metric = outcome.sides[0].primary_metric
        matrix = sensitivity_matrix({s.side.label: s.statistics(metric) for s in outcome.sides})
    names = list(matrix.names)
    if as_json:
        emit_json({"metric": metric, "names": names, "mwu_p": matrix.mwu_p.tolist(), "ks_p": matrix.ks_p.tolist(),
                   "trials": trials})
        return
    console = out_console()
    console.print(f"[bold]{metric}[/]: {trials} interleaved trials per configuration; cells: Mann-Whitney p / KS p "
                  "(diagonal: even vs odd trials of the same configuration, A/A)")
    table = Table(box=None, pad_edge=False)
    table.add_column("")
    for index, _ in enumerate(names):
        table.add_column(f"[{index}]", justify="right")
    for i, name in enumerate(names):
        cells = [f"{matrix.mwu_p[i, j]:.3f} / {matrix.ks_p[i, j]:.3f}" for j in range(len(names))]
        table.add_row(f"[{i}] {name}", *cells)
    console.print(table)
