"""``kbench calibrate``: A/A run-to-run noise of a benchmark on a target, and what it can detect."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table

from kbench.catalog.benchmarks import lookup
from kbench.cli.main import Context, emit_json, out_console, pass_context, user_errors
from kbench.cli.parsing import KeyValue
from kbench.compare.detectable import minimum_detectable_effect
from kbench.engine.compare_protocol import ComparisonSide, run_comparison
from kbench.engine.request import RunRequest
from kbench.targets.factory import make_target

POWERS = (0.8, 0.95)


@click.command("calibrate")
@click.argument("benchmark")
@click.option("--kernel", metavar="SPEC", help="Calibrate in this kernel (booted in qemu); default: local.")
@click.option("-p", "--param", "params", multiple=True, type=KeyValue())
@click.option("--samples", type=click.IntRange(min=1), help="Samples per trial.")
@click.option("--trials", type=click.IntRange(min=3), default=10, show_default=True,
              help="Trials in each of the two A/A sets.")
@click.option("--budget", "budgets", multiple=True, type=click.IntRange(min=2),
              help="Trial budgets (per side) to report the detectable effect for (default 5, 10, 20).")
@click.option("--alpha", type=click.FloatRange(min=0.0001, max=0.5), default=0.05, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@pass_context
def calibrate_cmd(
    ctx: Context, benchmark: str, kernel: str | None, params: tuple[tuple[str, str], ...], samples: int | None,
    trials: int, budgets: tuple[int, ...], alpha: float, as_json: bool,
) -> None:
    """Measure BENCHMARK twice (two interleaved A/A sets), store the noise, and report the
    minimum detectable effect at 80% and 95% power for each trial budget."""
    target = kernel or "local"
    with user_errors():
        bench = lookup(benchmark)
        bench.validate_params(dict(params))
        request = RunRequest(benchmark=bench.name, params=dict(params), samples=samples)
        sides = [ComparisonSide(label=label, kernel=kernel, benchmark=bench, request=request) for label in ("A1", "A2")]
        outcome = run_comparison(ctx.store, sides, make_target, max_trials=trials, adaptive=False,
                                 tags=("calibration",))
        metric = outcome.sides[0].primary_metric
        sets = (outcome.sides[0].statistics(metric), outcome.sides[1].statistics(metric))
        rows: list[dict[str, Any]] = []
        warnings: set[str] = set()
        for n in budgets or (5, 10, 20):
            for power in POWERS:
                effect = minimum_detectable_effect(sets, n, power=power, alpha=alpha)
                rows.append({"trials": n, "power": power, "effect_pct": effect.effect_pct})
                warnings.update(effect.warnings)
        sigma = minimum_detectable_effect(sets, trials, alpha=alpha)
        run_ids = [getattr(run, "run_id", 0) for side in outcome.sides for run in side.runs]
        calibration_id = ctx.store.save_calibration(
            benchmark=bench.name, metric=metric, target=target, params=dict(params),
            trials={"A1": sets[0], "A2": sets[1]}, run_ids=run_ids, sigma_log=sigma.sigma_log, mde=rows,
        )
    result = {
        "calibration_id": calibration_id, "benchmark": bench.name, "metric": metric, "target": target,
        "trials": {"A1": sets[0], "A2": sets[1]}, "sigma_log": sigma.sigma_log,
        "aa_change_pct": sigma.aa_change_pct, "aa_p_value": sigma.aa_p_value, "mde": rows,
        "warnings": sorted(warnings | set(sigma.warnings)),
    }
    if as_json:
        emit_json(result)
        return
    console = out_console()
    console.print(f"[bold]{metric}[/] on {target}: calibration {calibration_id}, 2 × {trials} interleaved trials")
    console.print(f"run-to-run noise: σ(log trial median) = {100 * sigma.sigma_log:.2f}%; "
                  f"A/A difference {sigma.aa_change_pct:+.2f}% (p={sigma.aa_p_value:.3g})", highlight=False)
    table = Table(box=None, pad_edge=False, title="smallest change detectable (two-sided, "
                  f"alpha {alpha:g})", title_justify="left")
    table.add_column("trials per side", justify="right")
    for power in POWERS:
        table.add_column(f"{power:.0%} power", justify="right")
    for n in sorted({row["trials"] for row in rows}):
        cells = [f"{row['effect_pct']:.2f}%" if row["effect_pct"] != float("inf") else "undetectable"
                 for row in rows if row["trials"] == n]
        table.add_row(str(n), *cells)
    console.print(table)
    for warning in sorted(warnings | set(sigma.warnings)):
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
