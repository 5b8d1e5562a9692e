"""``kbench calibrate``: A/A noise of a benchmark on a target with compare's own design, what it can
detect, and the equivalence margin ``kbench compare`` then uses by default."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table
from rich.text import Text

from kbench.cli.main import Context, emit_json, out_console, pass_context, user_errors
from kbench.cli.parsing import Duration, KeyValue, complete_benchmarks
from kbench.cli.progress import LongWork, quiet_option, slot_steps, trial_steps
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.engine.calibration import POWERS, Calibration, calibrate
from kbench.engine.comparison_sides import AUTO, DESIGNS
from kbench.engine.interleaved import DEFAULT_BUDGET_S


@click.command("calibrate")
@click.argument("benchmark", required=False, shell_complete=complete_benchmarks)
@click.option("--command", "command", metavar="CMD", help="Calibrate this command (the `command` benchmark).")
@click.option("--kernel", metavar="SPEC", help="Calibrate in this kernel (booted in qemu); default: local.")
@click.option("-p", "--param", "params", multiple=True, type=KeyValue())
@click.option("--design", type=click.Choice(DESIGNS), default=AUTO, show_default=True,
              help="The design to calibrate (auto: the one `kbench compare` would use).")
@click.option("--metric", type=click.Choice(["cpu", "wall"]), default="cpu", show_default=True,
              help="Commands: the metric compare judges.")
@click.option("--budget", type=Duration(), default=f"{DEFAULT_BUDGET_S:g}s", show_default=True,
              help="Interleaved design: measuring time of the A/A comparison (compare's default budget).")
@click.option("--samples", type=click.IntRange(min=1), help="Samples per trial or per interleaved slot.")
@click.option("--trials", type=click.IntRange(min=3), default=10, show_default=True,
              help="Trials design: trials in each of the two A/A sets.")
@click.option("--budget-trials", "budgets", multiple=True, type=click.IntRange(min=2),
              help="Trials design: budgets (per side) to report the detectable effect for (default 5, 10, 20).")
@click.option("--alpha", type=click.FloatRange(min=0.0001, max=0.5), default=DEFAULT_ALPHA, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@quiet_option
@pass_context
def calibrate_cmd(
    ctx: Context, benchmark: str | None, command: str | None, kernel: str | None, params: tuple[tuple[str, str], ...],
    design: str, metric: str, budget: float, samples: int | None, trials: int, budgets: tuple[int, ...],
    alpha: float, seed: int, as_json: bool, quiet: bool,
) -> None:
    """Measure BENCHMARK (or --command CMD) against itself with the design `kbench compare`
    uses, store the noise, and report the smallest change it can detect and the equivalence
    margin compare will use for it from now on."""
    with user_errors(), LongWork("calibrating", quiet=quiet or as_json) as work:
        found = calibrate(
            ctx.store, benchmark=benchmark, command=command, kernel=kernel, params=dict(params), design=design,
            metric=metric, budget_s=budget, samples=samples, trials=trials, budgets=budgets, alpha=alpha, seed=seed,
            on_slot=slot_steps(work), on_trial=trial_steps(work, 2),
        )
    if as_json:
        emit_json(_as_json(found))
        return
    _print(found, alpha)


def _as_json(found: Calibration) -> dict[str, Any]:
    return {
        "calibration_id": found.calibration_id, "benchmark": found.benchmark, "metric": found.metric,
        "target": found.target, "design": found.design, "trials": found.sets, "sigma_log": found.sigma_log,
        "aa_change_pct": found.aa_change_pct, "aa_p_value": found.aa_p_value, "aa_verdict": found.aa_verdict,
        "mde": found.rows, "margin_pct": found.margin_pct, "warnings": found.warnings,
    }


def _print(found: Calibration, alpha: float) -> None:
    console = out_console()
    console.print(Text.assemble((found.metric, "bold"), f" on {found.target}: calibration {found.calibration_id}, "
                                f"{found.design_text}"), highlight=False)
    unit = "block log-ratio" if found.design == "interleaved" else "log trial median"
    console.print(f"run-to-run noise: σ({unit}) = {100 * found.sigma_log:.2f}%; A/A difference "
                  f"{found.aa_change_pct:+.2f}% (p={found.aa_p_value:.3g}, {found.aa_verdict})", highlight=False)
    table = Table(box=None, pad_edge=False, title=f"smallest change detectable (two-sided, alpha {alpha:g})",
                  title_justify="left")
    size = "blocks" if found.design == "interleaved" else "trials per side"
    table.add_column(size, justify="right")
    for power in POWERS:
        table.add_column(f"{power:.0%} power", justify="right")
    for n in sorted({row["n"] for row in found.rows}):
        cells = [f"{row['effect_pct']:.2f}%" if row["effect_pct"] != float("inf") else "undetectable"
                 for row in found.rows if row["n"] == n]
        table.add_row(str(n), *cells)
    console.print(table)
    console.print(f"equivalence margin for `kbench compare` from now on: ±{found.margin_pct:g}%", highlight=False)
    for warning in found.warnings:
        console.print(Text.assemble(("warning:", "yellow"), f" {warning}"), highlight=False)
