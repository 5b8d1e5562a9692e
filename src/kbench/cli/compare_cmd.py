"""``kbench compare``: A/B(/N) verdicts on kernels, commands or stored runs."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kbench.catalog.benchmarks import lookup
from kbench.cli.main import Context, err_console, pass_context, user_errors
from kbench.cli.parsing import KeyValue
from kbench.engine.compare_protocol import ComparisonOutcome, ComparisonSide, run_comparison
from kbench.engine.comparison_report import build_report
from kbench.engine.request import BadRequest, RunRequest
from kbench.engine.stored_comparison import stored_outcome
from kbench.report.comparison import EXTENSIONS, FORMATS, gobench, render
from kbench.store.db import Store
from kbench.sysinfo.collect import collect_sysinfo
from kbench.targets.factory import make_target


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
@click.argument("benchmark", required=False)
@click.option("--kernel", "kernels", multiple=True, metavar="SPEC",
              help="A side per kernel (deb:<release>, bzImage, build tree, or local); the first is the base.")
@click.option("--command", "commands", multiple=True, metavar="CMD",
              help="A side per command line (the `command` workload); the first is the base.")
@click.option("--runs", "run_sets", multiple=True, metavar="SELECTOR",
              help="A side of stored runs (each run is one trial): ids `1,2,3`, `tag:NAME`, or `kernel:RELEASE` "
              "(with BENCHMARK to pick the benchmark).")
@click.option("-p", "--param", "params", multiple=True, type=KeyValue(), help="Benchmark parameter KEY=VALUE.")
@click.option("--samples", type=click.IntRange(min=1), help="Samples per trial (default: the benchmark's).")
@click.option("--trials", type=click.IntRange(min=3), default=10, show_default=True,
              help="Most trials per side (the budget); adaptive stopping may use fewer.")
@click.option("--min-trials", type=click.IntRange(min=2), default=5, show_default=True,
              help="Trials per side before the first look.")
@click.option("--fixed", is_flag=True, help="Always run --trials trials per side (no adaptive stopping).")
@click.option("--trials-per-boot", type=click.IntRange(min=1), default=3, show_default=True,
              help="VM sides: trials in each boot (several boots per side).")
@click.option("--margin", help="Equivalence margin: also decide 'the same within ±M' (e.g. 1%).")
@click.option("--alpha", type=click.FloatRange(min=0.0001, max=0.5), default=0.05, show_default=True)
@click.option("--correction", type=click.Choice(["holm", "bh"]), default="holm", show_default=True,
              help="Multiple-comparison control for secondary metrics (family-wise Holm or FDR).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the randomized trial order.")
@click.option("--format", "fmt", type=click.Choice(sorted(FORMATS)), default="text", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), help="Write the report here.")
@click.option(
    "--report-dir", type=click.Path(file_okay=False, path_type=Path),
    help="Also write every format there: report.txt, report.json, report.md, report.html and benchstat files.",
)
@pass_context
def compare_cmd(
    ctx: Context, benchmark: str | None, kernels: tuple[str, ...], commands: tuple[str, ...],
    run_sets: tuple[str, ...], params: tuple[tuple[str, str], ...], samples: int | None, trials: int,
    min_trials: int, fixed: bool, trials_per_boot: int, margin: str | None, alpha: float, correction: str,
    seed: int, fmt: str, as_json: bool, output: Path | None, report_dir: Path | None,
) -> None:
    """Compare kernels (--kernel A --kernel B BENCH), programs (--command A --command B) or
    stored runs (--runs 1,2,3 --runs 4,5,6): interleaved randomized trials, a verdict per
    metric with change, confidence interval and p-value, and the error rates it keeps."""
    kinds = [name for name, given in (("--kernel", kernels), ("--command", commands), ("--runs", run_sets)) if given]
    if len(kinds) != 1:
        raise click.UsageError("give the sides with exactly one of --kernel, --command or --runs (twice or more)")
    margin_value = parse_margin(margin)
    fmt = "json" if as_json else fmt
    with user_errors():
        store = ctx.store
        if run_sets:
            outcome = stored_outcome(store, [select_runs(store, text, benchmark) for text in run_sets])
            label_kind, title_what = "stored", outcome.sides[0].primary_metric
            if benchmark and lookup(benchmark).name != outcome.sides[0].side.benchmark.name:
                raise BadRequest(
                    f"the runs measure {outcome.sides[0].side.benchmark.name}, not {lookup(benchmark).name}"
                )
        else:
            sides = _measured_sides(benchmark, kernels, commands, dict(params), samples)
            label_kind = "kernel" if kernels else "program"
            title_what = sides[0].benchmark.name
            outcome = _measure(store, sides, trials, min_trials, not fixed, alpha, margin_value, seed, trials_per_boot)
        noise_floor = _noise_floor(store, outcome)
        report = build_report(
            outcome, title=f"{title_what}: {' vs '.join(s.side.label for s in outcome.sides)}",
            label_kind=label_kind, alpha=alpha, margin=margin_value,
            correction="bh" if correction == "bh" else "holm",
            context=_context(), parameters={"params": dict(params), "samples per trial": samples or "default",
                                            "seed": seed, "alpha": alpha, "margin": margin or "none",
                                            "noise floor": noise_floor},
        )
    if report_dir is not None:
        report_dir.mkdir(parents=True, exist_ok=True)
        for name in ("text", "json", "markdown", "html"):
            (report_dir / f"report.{EXTENSIONS[name]}").write_text(render(report, name))
        gobench.write_files(report, report_dir / "benchstat")
        err_console.print(f"wrote the text, JSON, markdown, HTML and benchstat reports to {report_dir}")
    text = render(report, fmt)
    if output is not None:
        output.write_text(text)
        err_console.print(f"wrote {output}")
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def select_runs(store: Store, selector: str, benchmark: str | None) -> list[int]:
    """Run ids for ``1,2,3``, ``tag:NAME`` or ``kernel:RELEASE`` (completed runs, oldest first)."""
    kind, _, value = selector.partition(":")
    if kind in ("tag", "kernel") and value:
        bench = lookup(benchmark).name if benchmark else None
        rows = store.list_runs(
            benchmark=bench, status="complete", limit=10_000,
            tag=value if kind == "tag" else None, kernel_release=value if kind == "kernel" else None,
        )
        if not rows:
            raise BadRequest(f"no completed runs match {selector!r}" + (f" for {bench}" if bench else ""))
        return sorted(int(row["id"]) for row in rows)
    try:
        ids = [int(part) for part in selector.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(
            f"{selector!r} is not a run selector (ids like 1,2,3, tag:NAME or kernel:RELEASE)", param_hint="--runs"
        ) from None
    if not ids:
        raise click.BadParameter("an empty list of runs", param_hint="--runs")
    return ids


def _measured_sides(
    benchmark: str | None, kernels: tuple[str, ...], commands: tuple[str, ...], params: dict[str, str],
    samples: int | None,
) -> list[ComparisonSide]:
    if len(commands or kernels) < 2:
        raise BadRequest("a comparison needs at least two sides: give --command (or --kernel) twice or more")
    if commands:
        if benchmark:
            raise click.UsageError("--command compares commands: give no BENCHMARK")
        bench = lookup("command")
        if len(set(commands)) != len(commands):
            raise BadRequest("two --command sides are identical; to measure A/A noise use `kbench calibrate`")
        return [
            ComparisonSide(
                label=cmd, kernel=None, benchmark=bench,
                request=RunRequest(benchmark=bench.name, params={**params, "cmd": cmd}, samples=samples or 20),
            )
            for cmd in commands
        ]
    if not benchmark:
        raise click.UsageError("--kernel sides need a BENCHMARK to run on each")
    bench = lookup(benchmark)
    bench.validate_params(params)
    if len(set(kernels)) != len(kernels):
        raise BadRequest("two --kernel sides are identical; to measure A/A noise use `kbench calibrate`")
    return [
        ComparisonSide(label=spec.removeprefix("deb:"), kernel=spec, benchmark=bench,
                       request=RunRequest(benchmark=bench.name, params=params, samples=samples))
        for spec in kernels
    ]


def _measure(
    store: Store, sides: list[ComparisonSide], trials: int, min_trials: int, adaptive: bool, alpha: float,
    margin: float | None, seed: int, trials_per_boot: int,
) -> ComparisonOutcome:
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=True, disable=not err_console.is_terminal,
    ) as bar:
        task = bar.add_task("trials", total=trials * len(sides))

        def on_trial(label: str, index: int, planned: int) -> None:
            bar.update(task, description=f"{label} trial {index + 1}")
            bar.advance(task)

        return run_comparison(
            store, sides, make_target, max_trials=trials, min_trials=min(min_trials, trials), adaptive=adaptive,
            alpha=alpha, margin=margin, seed=seed, trials_per_boot=trials_per_boot, on_trial=on_trial,
        )


def _context() -> dict[str, object]:
    info = collect_sysinfo()
    return {
        "host": info["hostname"],
        "cpu": f"{info['cpu']['model']} x {info['cpu']['count']}",
        "memory": f"{(info['memory_bytes'] or 0) / 2**30:.1f} GiB",
        "host kernel": info["kernel"]["release"],
        "virtualization": info["virtualization"].get("vm"),
    }


def _noise_floor(store: Store, outcome: ComparisonOutcome) -> str:
    """The base side's latest A/A calibration, as the smallest change it can detect."""
    base = outcome.sides[0].side
    calibration = store.latest_calibration(base.benchmark.name, base.kernel or "local")
    if calibration is None:
        return f"unknown: run `kbench calibrate {base.benchmark.name}` to measure it"
    trials = max(len(side.runs) for side in outcome.sides)
    rows = [row for row in calibration["mde"] if row["power"] == 0.8]
    if not rows:
        return f"calibration {calibration['id']} has no 80% power figure"
    row = min(rows, key=lambda r: abs(r["trials"] - trials))
    return (f"{row['effect_pct']:.2f}% at 80% power with {row['trials']} trials per side "
            f"(A/A calibration {calibration['id']}, sigma {100 * calibration['sigma_log']:.2f}%)")
