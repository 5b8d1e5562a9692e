"""``kbench compare``: A/B(/N) verdicts on kernels, commands or stored runs.

The command parses its options into a ``ComparisonSpec``; ``kbench.engine.compare.compare``
chooses the design and measures, ``kbench.report.comparison.outcome.comparison_report``
builds the report, and the command renders it (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbench.cli.compare_display import CompareDisplay
from kbench.cli.console import write_stdout
from kbench.cli.fail_on import exit_if_found, fail_on_option
from kbench.cli.main import Context, err_console, pass_context, user_errors
from kbench.cli.metric_option import METRIC_HELP, MetricChoice, split_metric
from kbench.cli.module_options import COPIES_HELP, LOCAL_KERNEL_HELP, MAX_COPIES, MODULE_HELP
from kbench.cli.needs import needs_extra
from kbench.cli.parsing import Duration, KeyValue, Runs, complete_benchmarks
from kbench.compare.thresholds import DEFAULT_ALPHA, DEFAULT_MARGIN, MAX_NOISE_MARGIN
from kbench.engine.compare_spec import AUTO, DEFAULT_BUDGET_S, DESIGNS, BadCombination, ComparisonSpec, check
from kbench.profile.defaults import COUNTERS_BY_DEFAULT
from kbench.report.comparison import EXTENSIONS, FORMATS, render

if TYPE_CHECKING:
    from kbench.engine.run_selection import RunSelector
    from kbench.report.comparison.model import ComparisonReport, MetricComparison


def parse_margin(text: str | None) -> float | None:
    """``1%`` or ``0.01`` → 0.01."""
    if text is None:
        return None
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a margin (e.g. 1% or 0.01)", param_hint="--margin") from None
    if not 0 < value < 1:
        raise click.BadParameter(f"margin must be between 0 and 100%, got {text!r}", param_hint="--margin")
    return value


@click.command("compare")
@click.argument("benchmark", required=False, shell_complete=complete_benchmarks)
@click.option("--kernel", "kernels", multiple=True, metavar="SPEC",
              help="A side per kernel (deb:<release>, bzImage, build tree, or local); the first is the base. "
              "With one --kernel and a parameter varied with '|', the sides run in that kernel.")
@click.option("--command", "commands", multiple=True, metavar="CMD",
              help="A side per command line (the `command` workload); the first is the base.")
@click.option("--runs", "run_sets", multiple=True, type=Runs(),
              help="A side of stored runs (each run is one trial): ids `1,2,3`, `tag:NAME`, or `kernel:RELEASE` "
              "(with BENCHMARK to pick the benchmark).")
@click.option("-p", "--param", "params", multiple=True, type=KeyValue(),
              help="Benchmark parameter KEY=VALUE; KEY=V1|V2 makes one side per value (the first is the base).")
@click.option("--module", "modules", multiple=True, type=click.Path(exists=True, path_type=Path),
              help=MODULE_HELP)
@click.option("--copies", type=click.IntRange(min=1, max=MAX_COPIES), help=COPIES_HELP)
@click.option("--local-kernel", is_flag=True, help=LOCAL_KERNEL_HELP)
@click.option("--whole-runs", is_flag=True,
              help="Interleaved, in-kernel benchmarks: alternate whole kbench.ko runs from outside instead of "
              "short slots inside one kernel thread (the default).")
@click.option("--design", type=click.Choice(DESIGNS), default=AUTO, show_default=True,
              help="interleaved: sides alternate slot by slot in random ABBA blocks (commands, syscalls, "
              "in-kernel functions on one target); trials: whole runs, per kernel boot. auto picks interleaved "
              "where it applies.")
@click.option("--metric", type=MetricChoice(), default="cpu", show_default=True, help=METRIC_HELP)
@click.option("--budget", type=Duration(), default=f"{DEFAULT_BUDGET_S:g}s", show_default=True,
              help="Interleaved: measuring time; looks at 20..100% of it stop early once the verdict is safe.")
@click.option("--blocks", type=click.IntRange(min=1), help="Interleaved: at most this many blocks.")
@click.option("--samples", type=click.IntRange(min=1),
              help="Samples per trial, or per interleaved slot (commands: executions per slot, default: about "
              "0.1 s worth).")
@click.option("--trials", type=click.IntRange(min=1),
              help="Trials design: most trials per side (default 10); selects the trials design under auto.")
@click.option("--min-trials", type=click.IntRange(min=2), help="Trials design: trials per side before the first "
              "look (default 5).")
@click.option("--fixed", is_flag=True, help="No adaptive stopping: every trial, or the whole budget.")
@click.option("--trials-per-boot", type=click.IntRange(min=1), default=3, show_default=True,
              help="Trials design, VM sides: trials in each boot (several boots per side).")
@click.option("--margin", help="Equivalence margin: 'no change' once the interval lies within ±M (e.g. 0.5%). "
              "Default: from `kbench calibrate`; else the interleaved design measures it from its own noise "
              f"(±{100 * DEFAULT_MARGIN:g}% to ±{100 * MAX_NOISE_MARGIN:g}%) and the trials design uses "
              f"±{100 * DEFAULT_MARGIN:g}%.")
@click.option("--alpha", type=click.FloatRange(min=0.0001, max=0.5), default=DEFAULT_ALPHA, show_default=True)
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm", show_default=True,
              help="Multiple-comparison control for secondary metrics (family-wise Holm or FDR).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the randomized order.")
@click.option("--profile", "profile", is_flag=True,
              help="After the timed blocks or trials, profile each side in a run of its own (perf record, call "
              "graphs) and report the profile delta against the base and flame graphs (stored runs: their stored "
              "profiles are used when every side has one).")
@click.option("--counters/--no-counters", default=None,
              help="perf event counters in every slot or trial (stored runs: those they counted), judged per "
              "operation as secondary metrics "
              f"(default: {'on' if COUNTERS_BY_DEFAULT else 'off'}).")
@click.option("--ignore-failure", is_flag=True,
              help="Time failed executions too (a non-zero exit, a death by signal, a system call's error) and "
              "count them beside the verdict; by default the first one fails the comparison (exit 12), naming "
              "the side, and stored runs that timed failures are refused.")
@click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)), default="text", show_default=True,
              callback=needs_extra("plots", "kbench compare --format html (its plots)", lambda fmt: fmt == "html"))
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option(
    "--report-dir", type=click.Path(file_okay=False, path_type=Path),
    callback=needs_extra("plots", "kbench compare --report-dir (report.html's plots)"),
    help="Also write every format there: report.txt, report.json, report.md, report.html and benchstat files.",
)
@click.option("--fleet", "fleet_class", metavar="CLASS",
              help="Measure on one fleet worker of machine class CLASS (all sides on that machine) and store the "
              "runs in the fleet's database; waits for it and reports here (docs/fleet.md).")
@fail_on_option
@pass_context
def compare_cmd(
    ctx: Context, benchmark: str | None, kernels: tuple[str, ...], commands: tuple[str, ...],
    run_sets: tuple[RunSelector, ...], params: tuple[tuple[str, str], ...], modules: tuple[Path, ...],
    copies: int | None, local_kernel: bool, whole_runs: bool, design: str, metric: str, budget: float,
    blocks: int | None, samples: int | None, trials: int | None, min_trials: int | None, fixed: bool,
    trials_per_boot: int, margin: str | None, alpha: float, correction: str, seed: int, profile: bool,
    counters: bool | None, ignore_failure: bool, fmt: str, as_json: bool, output: Path | None,
    report_dir: Path | None, fleet_class: str | None, fail_on: frozenset[str],
) -> None:
    """Compare programs (--command A --command B), configurations (BENCH -p KEY=V1|V2),
    kernels (--kernel A --kernel B BENCH) or stored runs (--runs 1,2,3 --runs 4,5,6): a verdict
    per metric - regression, improvement, no change or inconclusive with its reason - with the
    change, its confidence interval and p-value, and the design that measured it."""
    spec = ComparisonSpec(
        benchmark=benchmark, kernels=kernels, commands=commands, run_sets=run_sets, params=params, modules=modules,
        copies=copies, local_kernel=local_kernel, whole_runs=whole_runs, design=design, budget_s=budget,
        blocks=blocks, samples=samples, trials=trials, min_trials=min_trials, fixed=fixed,
        trials_per_boot=trials_per_boot, alpha=alpha, correction=correction, seed=seed, profile=profile,
        counters=counters, ignore_failure=ignore_failure)
    try:
        spec = check(spec)
    except BadCombination as refused:
        raise click.UsageError(str(refused)) from None
    counting, time_metric = split_metric(metric)  # instructions (docs/instructions.md), a time, or both
    spec = replace(spec, margin=parse_margin(margin), margin_text=margin, counting=counting, time_metric=time_metric)
    fmt = "json" if as_json else fmt
    if fleet_class is not None:
        _compare_on_fleet(spec, fleet_class, fmt, output, report_dir, fail_on)
        return
    with user_errors():
        from kbench.engine.compare import compare
        from kbench.report.comparison.outcome import comparison_report

        store = ctx.reader if run_sets else ctx.store  # stored runs are only read
        report = comparison_report(compare(spec, store, display=CompareDisplay(quiet=fmt == "json")), store)
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        for name in ("text", "json", "markdown", "html"):
            (report_dir / f"report.{EXTENSIONS[name]}").write_text(render(report, name))
        from kbench.report.comparison import gobench
        from kbench.report.comparison.profiles import write_flame_graphs

        gobench.write_files(report, report_dir / "benchstat")
        flames = write_flame_graphs(report, report_dir)
        err_console.print(f"wrote the text, JSON, markdown, HTML and benchstat reports"
                          f"{' and ' + str(len(flames)) + ' flame graphs' if flames else ''} to {report_dir}")
    text = render(report, fmt)
    if output is not None:
        output.write_text(text)
        err_console.print(f"wrote {output}")
    else:
        write_stdout(text if text.endswith("\n") else text + "\n", data=fmt != "text")
    # a real change smaller than the margin is said as found, but the margin says it does not matter
    exit_if_found(fail_on, ((m.verdict, _named(report, m)) for m in report.metrics if not m.real_within_margin))


def _compare_on_fleet(spec: ComparisonSpec, queue: str, fmt: str, output: Path | None, report_dir: Path | None,
                      fail_on: frozenset[str]) -> None:
    """``--fleet CLASS``: the comparison measured by a worker of CLASS (``kbench.cli.compare_fleet``)."""
    from kbench.fleet.compare_task import FORMATS, refuse_for_fleet

    try:
        refuse_for_fleet(spec)
    except BadCombination as refused:
        raise click.UsageError(str(refused)) from None
    if report_dir is not None or fmt not in FORMATS:
        raise click.UsageError(f"--fleet reports as {', '.join(FORMATS)}; for html or --report-dir, compare the "
                               "stored runs afterwards (--runs ID --runs ID with the fleet's --db)")
    with user_errors():
        from kbench.cli.compare_fleet import compare_on_fleet

        result = compare_on_fleet(spec, queue, lambda line: err_console.print(line, highlight=False, markup=False))
    text = str(result["formats"][fmt])
    if output is not None:
        output.write_text(text)
        err_console.print(f"wrote {output}")
    else:
        write_stdout(text if text.endswith("\n") else text + "\n", data=fmt != "text")
    exit_if_found(fail_on, ((str(verdict), str(what)) for verdict, what in result["verdicts"]))


def _named(report: ComparisonReport, metric: MetricComparison) -> str:
    """A metric's comparison in a few words: ``command.cpu`` or, with several new sides, ``command.cpu on B``."""
    if len(report.new_labels) == 1:
        return metric.metric
    return f"{metric.metric} on {report.new_label_of(metric)}"

