"""``kbench compare``: A/B(/N) verdicts on kernels, commands or stored runs."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click

from kbench.cli.console import label_column, write_stdout
from kbench.cli.fail_on import exit_if_found, fail_on_option
from kbench.cli.main import Context, err_console, pass_context, user_errors
from kbench.cli.metric_option import METRIC_HELP, MetricChoice, split_metric
from kbench.cli.module_options import (
    COPIES_HELP,
    LOCAL_KERNEL_HELP,
    MAX_COPIES,
    MODULE_HELP,
    ONE_COPY_WARNING,
    check_module_sides,
    module_copy_count,
)
from kbench.cli.needs import needs_extra
from kbench.cli.parsing import Duration, KeyValue, Runs, complete_benchmarks
from kbench.compare.multiple import Method
from kbench.compare.placement import builds_of
from kbench.compare.thresholds import DEFAULT_ALPHA, DEFAULT_MARGIN, MAX_NOISE_MARGIN
from kbench.contract.request import BadRequest
from kbench.engine.comparison_sides import (
    AUTO,
    DESIGNS,
    INTERLEAVED,
    TRIALS,
    build_sides,
    choose_design,
    default_margin,
    module_comparison,
)
from kbench.engine.failures import failure_counts, refuse_timed_failures
from kbench.engine.interleaved import DEFAULT_BUDGET_S
from kbench.engine.noise_floor import comparison_noise_floor
from kbench.engine.profiling import ProfiledSide, profile_sides, stored_side_profiles
from kbench.engine.run_selection import RunSelector, select_runs
from kbench.engine.stored_comparison import (
    measure_stored_margins,
    measured_on,
    runs_label,
    stored_interleaved,
    stored_outcome,
)
from kbench.profile.defaults import COUNTERS_BY_DEFAULT
from kbench.report.comparison import EXTENSIONS, FORMATS, render
from kbench.report.comparison.build import build_interleaved_report, build_report, with_failed_executions
from kbench.report.comparison.kernel_configs import with_kernel_configs
from kbench.report.comparison.noise_floor import noise_floor_text
from kbench.report.comparison.profiles import STORED_PROFILES, with_profiles, write_flame_graphs

if TYPE_CHECKING:  # what measuring needs is imported there: `compare --runs` reads stored runs without it
    from kbench.engine.compare_protocol import ComparisonOutcome, ComparisonSide
    from kbench.engine.interleaved import InterleavedOutcome
    from kbench.profile.folded import FoldedProfile
    from kbench.report.comparison.model import ComparisonReport, MetricComparison
    from kbench.store.db import Store
    from kbench.targets.base import Target


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
@fail_on_option
@pass_context
def compare_cmd(
    ctx: Context, benchmark: str | None, kernels: tuple[str, ...], commands: tuple[str, ...],
    run_sets: tuple[RunSelector, ...], params: tuple[tuple[str, str], ...], modules: tuple[Path, ...],
    copies: int | None, local_kernel: bool, whole_runs: bool, design: str, metric: str, budget: float,
    blocks: int | None, samples: int | None, trials: int | None, min_trials: int | None, fixed: bool,
    trials_per_boot: int, margin: str | None, alpha: float, correction: str, seed: int, profile: bool,
    counters: bool | None, ignore_failure: bool, fmt: str, as_json: bool, output: Path | None,
    report_dir: Path | None, fail_on: frozenset[str],
) -> None:
    """Compare programs (--command A --command B), configurations (BENCH -p KEY=V1|V2),
    kernels (--kernel A --kernel B BENCH) or stored runs (--runs 1,2,3 --runs 4,5,6): a verdict
    per metric - regression, improvement, no change or inconclusive with its reason - with the
    change, its confidence interval and p-value, and the design that measured it."""
    kinds = [name for name, given in (("--kernel", kernels), ("--command", commands), ("--runs", run_sets)) if given]
    if modules:
        check_module_sides(kernels, bool(commands or run_sets), local_kernel, design == TRIALS)
        copies = module_copy_count(modules, copies)
    elif copies is not None:
        raise click.UsageError("--copies applies to --module given twice or more")
    elif len(kinds) > 1 or (not kinds and not any("|" in value for _, value in params)):
        raise click.UsageError("give the sides with exactly one of --kernel, --command or --runs (twice or more), "
                               "or vary one parameter with -p KEY=V1|V2")
    margin_value = parse_margin(margin)
    fmt = "json" if as_json else fmt
    trial_options = trials is not None or min_trials is not None
    counting, time_metric = split_metric(metric)  # instructions (docs/instructions.md), a time, or both
    metric = time_metric or "cpu"
    with user_errors():
        store = ctx.reader if run_sets else ctx.store  # stored runs are only read
        correction_method: Method = "bh" if correction == "bh" else "holm"
        selected = [select_runs(store, selector, benchmark) for selector in run_sets]
        side_runs = {runs_label(ids): ids for ids in selected}
        if not ignore_failure:
            refuse_timed_failures(store, side_runs)
        counted = None
        if counting:
            from kbench.cli.compare_counts import compare_by_counts

            if time_metric is not None and run_sets:
                raise BadRequest("--metric instructions,TIME: stored runs are counted or timed, not both; compare "
                                 "them with --metric instructions")
            counted = compare_by_counts(
                ctx, benchmark=benchmark, kernels=kernels, commands=commands, selected=selected,
                params=dict(params), modules=modules, copies=copies if time_metric is None else None,
                local_kernel=local_kernel, samples=samples, alpha=alpha, margin=margin_value)
        replayed = (stored_interleaved(store, selected, alpha=alpha, margin=margin_value, counters=bool(counters))
                    if run_sets and not counting else None)
        copies_of = builds_of(replayed.measured_labels) if replayed is not None else None
        if counted is not None and time_metric is None:
            report = counted
        elif replayed is not None and copies_of is not None:
            from kbench.report.comparison.copies import build_copies_report

            builds, build_of = copies_of
            margin_value, margin_source = _margin(store, replayed.sides[0].side, margin_value, margin, TRIALS)
            report = build_copies_report(
                replayed, builds, build_of, title=f"{replayed.metrics[0].name}: {' vs '.join(builds)}",
                alpha=alpha, margin=margin_value, context=measured_on(store, selected, list(replayed.measured_labels)),
                parameters=_parameters(params, samples, seed, alpha, margin_source))
        elif replayed is not None:
            margin_value, margin_source = _margin(store, replayed.sides[0].side, margin_value, margin, INTERLEAVED)
            if margin_value is None:
                measure_stored_margins(replayed, alpha)
            report = build_interleaved_report(
                replayed, title=f"{replayed.metrics[0].name}: {' vs '.join(s.label for s in replayed.sides)}",
                label_kind="stored", alpha=alpha, margin=margin_value, correction=correction_method,
                context=measured_on(store, selected, [s.side.label for s in replayed.sides]),
                parameters=_parameters(params, samples, seed, alpha, margin_source),
            )
            report = with_profiles(report, stored_side_profiles(
                store, {s.label: s.run_id for s in replayed.sides}), note=STORED_PROFILES, every_side=True)
        elif run_sets:
            outcome = stored_outcome(store, selected, benchmark=benchmark, counters=bool(counters))
            base = outcome.sides[0].side
            margin_value, margin_source = _margin(store, base, margin_value, margin, TRIALS)
            report = build_report(
                outcome, title=f"{outcome.sides[0].primary_metric}: {' vs '.join(s.side.label for s in outcome.sides)}",
                label_kind="stored", alpha=alpha, margin=margin_value, correction=correction_method,
                context=measured_on(store, selected, [s.side.label for s in outcome.sides]),
                parameters=_parameters(params, samples, seed, alpha, margin_source)
                | {"noise floor": noise_floor_text(comparison_noise_floor(store, outcome))},
            )
            first_runs = {s.side.label: s.runs[0].run_id for s in outcome.sides if s.runs}
            report = with_profiles(report, stored_side_profiles(store, first_runs), note=STORED_PROFILES,
                                   every_side=True)
        elif modules:
            from kbench.compare.budget import check_blocks
            from kbench.targets.suite_runner import suite_tools

            kernel = kernels[0] if kernels else None
            with module_comparison(kernel, modules, benchmark, dict(params), samples, copies=copies or 1,
                                   local_kernel=local_kernel,
                                   suite_tools=suite_tools([], perf=profile)) as (target, found):
                counting = COUNTERS_BY_DEFAULT if counters is None else counters
                sides = [replace(side, request=replace(side.request, counters=counting)) for side in found.sides]
                margin_value, margin_source = _margin(store, sides[0], margin_value, margin,
                                                      TRIALS if found.builds else INTERLEAVED)
                if blocks is not None and (refusal := check_blocks(blocks, alpha=alpha)):
                    raise BadRequest(refusal)
                # with copies, a build's profile is its first copy's, under the build's label
                first_copies = {found.build_of.index(build): label for build, label in enumerate(found.builds)}
                interleaved, profiles = _measure_interleaved(store, sides, budget, blocks, metric, alpha,
                                                             margin_value, seed, samples, not fixed, profile,
                                                             target=target, in_kernel=not whole_runs,
                                                             profile_as=first_copies or None, quiet=fmt == "json")
            module_parameters = (_parameters(params, samples, seed, alpha, margin_source)
                                 | {"modules": " ".join(str(m) for m in modules)})
            if found.builds:
                from kbench.report.comparison.copies import build_copies_report

                report = build_copies_report(
                    interleaved, found.builds, found.build_of, title=f"{found.title}: {' vs '.join(found.builds)}",
                    alpha=alpha, margin=margin_value, context=_context(), parameters=module_parameters)
            else:
                if len(modules) > 1:
                    module_parameters["placement"] = ONE_COPY_WARNING
                report = build_interleaved_report(
                    interleaved, title=f"{found.title}: {' vs '.join(s.label for s in sides)}",
                    label_kind=found.label_kind, alpha=alpha, margin=margin_value, correction=correction_method,
                    context=_context(), parameters=module_parameters)
            if profile:
                report = with_profiles(report, *profiles)
        else:
            from kbench.compare.budget import check_blocks, check_trials

            found = build_sides(benchmark, kernels, commands, dict(params), samples)
            counting = COUNTERS_BY_DEFAULT if counters is None else counters
            found = replace(found, sides=[replace(side, request=replace(side.request, counters=counting,
                                                                        ignore_failure=ignore_failure))
                                          for side in found.sides])
            chosen = choose_design(TRIALS if design == AUTO and trial_options else design, found.sides)
            margin_value, margin_source = _margin(store, found.sides[0], margin_value, margin, chosen)
            title = f"{found.title}: {' vs '.join(s.label for s in found.sides)}"
            parameters = _parameters(params, samples, seed, alpha, margin_source)
            if chosen == INTERLEAVED:
                if blocks is not None and (refusal := check_blocks(blocks, alpha=alpha)):
                    raise BadRequest(refusal)
                interleaved, profiles = _measure_interleaved(store, found.sides, budget, blocks, metric, alpha,
                                                             margin_value, seed, samples, not fixed, profile,
                                                             local_kernel=local_kernel, in_kernel=not whole_runs,
                                                             quiet=fmt == "json")
                report = build_interleaved_report(
                    interleaved, title=title, label_kind=found.label_kind, alpha=alpha, margin=margin_value,
                    correction=correction_method, context=_context(), parameters=parameters,
                )
                side_runs = {side.label: [side.run_id] for side in interleaved.sides}
                if profile:
                    report = with_profiles(report, *profiles)
            else:
                max_trials = trials or 10
                first_look = min(min_trials or 5, max_trials)
                refusal = check_trials(max_trials, alpha=alpha, adaptive=not fixed, min_trials=first_look)
                if refusal is not None:
                    raise BadRequest(refusal)
                outcome = _measure(store, found.sides, max_trials, first_look, not fixed, alpha, margin_value, seed,
                                   trials_per_boot, metric, quiet=fmt == "json")
                side_runs = {s.side.label: [run.run_id for run in s.runs] for s in outcome.sides}
                report = build_report(
                    outcome, title=title, label_kind=found.label_kind, alpha=alpha, margin=margin_value,
                    correction=correction_method, context=_context(),
                    parameters=parameters | {"noise floor": noise_floor_text(comparison_noise_floor(store, outcome))},
                )
                if profile:
                    from kbench.engine.target_factory import target_factory

                    profiled = [ProfiledSide(s.side.label, s.runs[0].run_id, s.side.benchmark, s.side.request,
                                             s.side.kernel) for s in outcome.sides if s.runs]
                    factory = target_factory((side.benchmark for side in found.sides), perf=True)
                    report = with_profiles(report, *profile_sides(store, profiled, factory))
        if counted is not None and time_metric is not None:
            from kbench.report.counts import merged

            report = merged(counted, report)  # instructions, then time: each metric with its verdict
        report = with_failed_executions(report, failure_counts(store, side_runs))
        report = with_kernel_configs(report, store, side_runs)
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        for name in ("text", "json", "markdown", "html"):
            (report_dir / f"report.{EXTENSIONS[name]}").write_text(render(report, name))
        from kbench.report.comparison import gobench

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


def _named(report: ComparisonReport, metric: MetricComparison) -> str:
    """A metric's comparison in a few words: ``command.cpu`` or, with several new sides, ``command.cpu on B``."""
    if len(report.new_labels) == 1:
        return metric.metric
    return f"{metric.metric} on {report.new_label_of(metric)}"


def _margin(
    store: Store, base: ComparisonSide, given: float | None, text: str | None, design: str
) -> tuple[float | None, str]:
    if given is not None:
        return given, f"±{100 * given:g}% (--margin {text})"
    return default_margin(store, base, design)


def _parameters(
    params: tuple[tuple[str, str], ...], samples: int | None, seed: int, alpha: float, margin_source: str
) -> dict[str, object]:
    return {"params": dict(params), "samples": samples or "default", "seed": seed, "alpha": alpha,
            "margin": margin_source}


def _measure(
    store: Store, sides: list[ComparisonSide], trials: int, min_trials: int, adaptive: bool, alpha: float,
    margin: float | None, seed: int, trials_per_boot: int, metric: str, *, quiet: bool = False,
) -> ComparisonOutcome:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from kbench.engine.compare_protocol import run_comparison
    from kbench.engine.target_factory import needs_perf, target_factory

    with Progress(
        label_column(), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True, disable=not err_console.is_terminal or quiet,
    ) as bar:
        task = bar.add_task("trials", total=trials * len(sides))

        def on_trial(label: str, index: int, planned: int) -> None:
            bar.update(task, description=f"{label} trial {index + 1}")
            bar.advance(task)

        benchmarks = [side.benchmark for side in sides]
        perf = needs_perf(benchmarks, counters=any(side.request.counters for side in sides), profile=False)
        return run_comparison(
            store, sides, target_factory(benchmarks, perf=perf), max_trials=trials, min_trials=min(min_trials, trials),
            adaptive=adaptive, alpha=alpha, margin=margin, seed=seed, trials_per_boot=trials_per_boot,
            on_trial=on_trial, metric=metric,
        )


def _measure_interleaved(
    store: Store, sides: list[ComparisonSide], budget: float, blocks: int | None, metric: str, alpha: float,
    margin: float | None, seed: int, samples: int | None, adaptive: bool, profile: bool, *,
    target: Target | None = None, local_kernel: bool = False, in_kernel: bool = True,
    profile_as: dict[int, str] | None = None, quiet: bool = False,
) -> tuple[InterleavedOutcome, tuple[dict[str, FoldedProfile], list[str]]]:
    """The interleaved comparison, and with ``profile`` each side profiled in a run of its own
    (``profile_as``: only these sides, under these labels)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from kbench.engine.in_kernel import interleaved_comparison
    from kbench.engine.target_factory import needs_perf
    from kbench.targets.factory import make_target
    from kbench.targets.suite_runner import suite_tools

    with Progress(
        label_column(), BarColumn(), TextColumn("{task.percentage:>3.0f}% of the budget"),
        TimeElapsedColumn(), console=err_console, transient=True, disable=not err_console.is_terminal or quiet,
    ) as bar:
        task = bar.add_task("pilot block", total=1.0)

        def on_slot(label: str, block: int, fraction: float) -> None:
            bar.update(task, description=f"block {block + 1}: {label}", completed=fraction)

        def measure(machine: Target) -> tuple[InterleavedOutcome, tuple[dict[str, FoldedProfile], list[str]]]:
            outcome = interleaved_comparison(store, sides, machine, budget_s=budget, max_blocks=blocks, metric=metric,
                                             alpha=alpha, margin=margin, margin_from_noise=margin is None, seed=seed,
                                             samples=samples, adaptive=adaptive, on_slot=on_slot, in_kernel=in_kernel)
            if not profile:
                return outcome, ({}, [])
            bar.update(task, description="profiling each side (a run of its own)", completed=1.0)
            labels = profile_as or {index: side.label for index, side in enumerate(outcome.sides)}
            profiled = [ProfiledSide(label, outcome.sides[index].run_id, outcome.sides[index].side.benchmark,
                                     outcome.sides[index].side.request) for index, label in labels.items()]
            return outcome, profile_sides(store, profiled, machine)

        if target is not None:
            return measure(target)
        tools = suite_tools([], perf=needs_perf([s.benchmark for s in sides], counters=False, profile=profile))
        with make_target(sides[0].kernel, local_kernel=local_kernel, suite_tools=tools) as machine:
            return measure(machine)


def _context() -> dict[str, object]:
    from kbench.sysinfo.collect import collect_sysinfo

    info = collect_sysinfo()
    return {
        "host": info["hostname"],
        "cpu": f"{info['cpu']['model']} x {info['cpu']['count']}",
        "memory": f"{(info['memory_bytes'] or 0) / 2**30:.1f} GiB",
        "host kernel": info["kernel"]["release"],
        "virtualization": info["virtualization"].get("vm"),
    }
