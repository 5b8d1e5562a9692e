"""``kbench sensitivity``: which configurations can be told apart, and which A/A pairs look different."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from kbench.cli.main import Context, emit_json, out_console, pass_context, user_errors
from kbench.cli.module_options import (
    COPIES_HELP,
    LOCAL_KERNEL_HELP,
    MAX_COPIES,
    MODULE_HELP,
    check_module_sides,
    module_copy_count,
)
from kbench.cli.parsing import Duration, KeyValue, complete_benchmarks
from kbench.cli.progress import LongWork, quiet_option, slot_steps, trial_steps
from kbench.compare.sensitivity import (
    PairedSensitivity,
    copies_sensitivity_matrix,
    paired_sensitivity_matrix,
    sensitivity_matrix,
)
from kbench.contract.request import BadRequest
from kbench.engine.compare_protocol import run_comparison
from kbench.engine.comparison_sides import (
    AUTO,
    DESIGNS,
    INTERLEAVED,
    TRIALS,
    Sides,
    build_sides,
    choose_design,
    module_comparison,
)
from kbench.engine.in_kernel import interleaved_comparison
from kbench.engine.interleaved import DEFAULT_BUDGET_S, InterleavedOutcome, SlotCallback
from kbench.store.db import Store
from kbench.targets.factory import make_target


@click.command("sensitivity")
@click.argument("benchmark", required=False, shell_complete=complete_benchmarks)
@click.option("--command", "commands", multiple=True, metavar="CMD", help="A configuration per command line.")
@click.option("--kernel", "kernels", multiple=True, metavar="SPEC",
              help="A configuration per kernel (with BENCHMARK); or one kernel for all with -p KEY=V1|V2.")
@click.option("-p", "--param", "params", multiple=True, type=KeyValue(),
              help="Benchmark parameter KEY=VALUE; KEY=V1|V2|... makes one configuration per value.")
@click.option("--module", "modules", multiple=True, type=click.Path(exists=True, path_type=Path), help=MODULE_HELP)
@click.option("--copies", type=click.IntRange(min=1, max=MAX_COPIES), help=COPIES_HELP)
@click.option("--local-kernel", is_flag=True, help=LOCAL_KERNEL_HELP)
@click.option("--design", type=click.Choice(DESIGNS), default=AUTO, show_default=True,
              help="interleaved (one target, slot by slot) or trials (whole runs).")
@click.option("--metric", type=click.Choice(["cpu", "wall", "instructions"]), default="cpu", show_default=True,
              help="Commands: CPU time (user + system of the child) or wall time; instructions: count them instead "
              "(commands, syscall.*, kfunc.*; docs/instructions.md): each pair's exact change.")
@click.option("--budget", type=Duration(), default=f"{DEFAULT_BUDGET_S:g}s", show_default=True,
              help="Interleaved design: measuring time (no early stop).")
@click.option("--samples", type=click.IntRange(min=1), help="Samples per trial or per interleaved slot.")
@click.option("--trials", type=click.IntRange(min=4), default=10, show_default=True,
              help="Trials design: trials per configuration (the diagonal compares even and odd trials: A/A).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@quiet_option
@pass_context
def sensitivity_cmd(
    ctx: Context, benchmark: str | None, commands: tuple[str, ...], kernels: tuple[str, ...],
    params: tuple[tuple[str, str], ...], modules: tuple[Path, ...], copies: int | None, local_kernel: bool,
    design: str, metric: str,
    budget: float, samples: int | None, trials: int, seed: int, as_json: bool, quiet: bool,
) -> None:
    """The matrix of p-values for every pair of configurations (commands, kernels, values of one
    parameter, or your own modules), A/A splits on the diagonal: which differences a method
    separates, and which it reports that are not there."""
    if modules:
        check_module_sides(kernels, bool(commands), local_kernel, design == TRIALS)
        copies = module_copy_count(modules, copies)
    elif copies is not None:
        raise click.UsageError("--copies applies to --module given twice or more")
    if metric == "instructions":
        from kbench.cli.sensitivity_counts import counts_sensitivity

        with user_errors():
            if commands and kernels:
                raise BadRequest("give --command configurations or --kernel configurations, not both")
            counts_sensitivity(ctx, benchmark=benchmark, kernels=kernels, commands=commands, params=dict(params),
                               modules=modules, local_kernel=local_kernel, samples=samples, as_json=as_json)
        return
    with user_errors(), LongWork("measuring the configurations", quiet=quiet or as_json) as work:
        if commands and kernels:  # with --module, check_module_sides refused --command already
            raise BadRequest("give --command configurations or --kernel configurations, not both")
        found = None if modules else build_sides(benchmark, kernels, commands, dict(params), samples)
        chosen = INTERLEAVED if found is None else choose_design(design, found.sides)
        copies_line = ""  # each copy's change, printed under the table (modules measured as copies)
        if chosen == INTERLEAVED:
            loaded: Sides | None = None
            if found is None:
                outcome, loaded = _module_outcome(ctx.store, modules, kernels[0] if kernels else None, local_kernel,
                                                  benchmark, dict(params), samples, budget, seed, copies or 1,
                                                  slot_steps(work))
            else:
                with make_target(found.sides[0].kernel) as target:
                    outcome = interleaved_comparison(ctx.store, found.sides, target, budget_s=budget, metric=metric,
                                                     seed=seed, samples=samples, adaptive=False,
                                                     tags=("sensitivity",), on_slot=slot_steps(work))
            metric_name = outcome.metrics[0].name
            if loaded is not None and loaded.builds:
                copies_matrix, result, heading, copies_line = _copies_matrix(outcome, loaded, metric_name)
                names, matrix, ks = list(copies_matrix.names), copies_matrix.paired_p, copies_matrix.ks_p
            else:
                paired = paired_sensitivity_matrix(
                    [s.label for s in outcome.sides],
                    [outcome.block_values(i, metric_name) for i in range(len(outcome.sides))],
                    [outcome.side_values(i, metric_name) for i in range(len(outcome.sides))],
                )
                result = {"metric": metric_name, "design": outcome.design, "test": "signed-rank",
                          "blocks": outcome.blocks, **paired.to_dict()}
                names, matrix, ks = list(paired.names), paired.paired_p, paired.ks_p
                heading = (f"{outcome.blocks} interleaved blocks; cells: signed-rank p / KS p (diagonal: even vs odd "
                           "blocks of the same configuration, Mann-Whitney / KS, A/A)")
                if len(modules) > 1:
                    result["placement"] = PLACEMENT_NOTE
                    heading += f"; {PLACEMENT_NOTE}"
        else:
            assert found is not None  # modules are measured interleaved
            trial_outcome = run_comparison(ctx.store, found.sides, make_target, max_trials=trials, adaptive=False,
                                           seed=seed, tags=("sensitivity",), metric=metric,
                                           on_trial=trial_steps(work, len(found.sides)))
            metric_name = trial_outcome.sides[0].primary_metric
            plain = sensitivity_matrix({s.side.label: s.statistics(metric_name) for s in trial_outcome.sides})
            result = {"metric": metric_name, "design": trial_outcome.design, "test": "mann-whitney",
                      "trials": trials, **plain.to_dict()}
            names, matrix, ks = list(plain.names), plain.mwu_p, plain.ks_p
            heading = (f"{trials} interleaved trials per configuration; cells: Mann-Whitney p / KS p (diagonal: "
                       "even vs odd trials of the same configuration, A/A)")
    if as_json:
        emit_json(result)
        return
    console = out_console()
    console.print(Text.assemble((metric_name, "bold"), f": {heading}"), highlight=False)
    table = Table(box=None, pad_edge=False)
    table.add_column("")
    for index, _ in enumerate(names):
        table.add_column(f"[{index}]", justify="right")
    for i, name in enumerate(names):
        cells = [f"{matrix[i, j]:.3f} / {ks[i, j]:.3f}" for j in range(len(names))]
        table.add_row(f"[{i}] {name}", *cells)
    console.print(table)
    if copies_line:
        console.print(Text(copies_line), highlight=False)


PLACEMENT_NOTE = ("one load of each module: a p-value between two modules also measures where each one's code "
                  "landed (two loads of one build measured up to 2% apart under TCG, docs/PERFORMANCE.md "
                  "'Placement'); for .c files, --copies 3 judges the modules on copies of each")


def _module_outcome(store: Store, modules: tuple[Path, ...], kernel: str | None, local_kernel: bool,
                    benchmark: str | None, params: dict[str, str], samples: int | None, budget: float,
                    seed: int, copies: int, on_slot: SlotCallback | None = None) -> tuple[InterleavedOutcome, Sides]:
    """The user's modules (or one module's parameter values) as the configurations, measured as
    ``compare --module`` measures them: inside kbench.ko, sides alternating in short slots,
    ``copies`` of each module loaded."""
    with module_comparison(kernel, modules, benchmark, params, samples, copies=copies,
                           local_kernel=local_kernel) as (target, found):
        outcome = interleaved_comparison(store, found.sides, target, budget_s=budget, seed=seed, samples=samples,
                                         adaptive=False, tags=("sensitivity",), on_slot=on_slot)
    return outcome, found


def _copies_matrix(outcome: InterleavedOutcome, found: Sides,
                   metric: str) -> tuple[PairedSensitivity, dict[str, Any], str, str]:
    """The builds' matrix from their copies (``copies_sensitivity_matrix``), its JSON, a heading
    and the line of each copy's change."""
    from kbench.report.comparison.copies import build_members, copies_text, copy_values

    values = copy_values(outcome, metric)
    members = build_members(found.build_of, len(found.builds))
    matrix = copies_sensitivity_matrix(
        found.builds, [[values[side] for side in group] for group in members],
        [[v for side in group for v in outcome.side_values(side, metric)] for group in members])
    per_build = len(members[0])
    base = outcome.sides[0].label
    copies = {build: [100 * math.expm1(values[side]) for side in group]
              for build, group in zip(found.builds, members, strict=True)}
    result = {"metric": metric, "design": outcome.design, "test": "student-t on copies", "blocks": outcome.blocks,
              "copies": per_build, "copy_change_pct": copies, "copies_against": base, **matrix.to_dict()}
    heading = (f"{per_build} copies of each module in {outcome.blocks} interleaved blocks; a copy's value: the median "
               f"block log-ratio against {base}; cells: Student's t p on the copies / KS p of the "
               "slots (diagonal: odd- against even-numbered copies of the module, A/A)")
    line = f"{metric} of each copy against {base}: {copies_text(found.builds, members, values)}"
    return matrix, result, heading, line
