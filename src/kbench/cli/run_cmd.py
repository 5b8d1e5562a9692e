"""``kbench run``: measure one benchmark and store the run."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from kbench import exit_codes, interrupts
from kbench.catalog.benchmarks import lookup
from kbench.cli.console import label_column
from kbench.cli.job_run import run_job_file
from kbench.cli.main import Context, emit_json, err_console, fail, literal, out_console, pass_context, user_errors
from kbench.cli.parsing import Duration, KeyValue, Warmup, complete_benchmarks
from kbench.cli.render import render_profile, render_quiet, render_run
from kbench.contract.benchmark import Benchmark, UnknownBenchmark
from kbench.contract.limits import request_problems
from kbench.contract.request import LABEL_MAX, BadRequest, RunRequest
from kbench.durations import Warmup as ParsedWarmup
from kbench.engine.profiling import stored_profile
from kbench.engine.runner import execute_run, store_failed_start
from kbench.engine.stored_run import stored_run
from kbench.engine.target_factory import needs_perf
from kbench.jobs import is_job_file
from kbench.jobs.expand import DEFAULT_MAX_INSTANCES
from kbench.kinds import instructions, kfunc
from kbench.kinds.instructions.benchmark import counted, kfunc_placeholder
from kbench.kinds.instructions.run import check_local_kernel_counting, counted_request
from kbench.kinds.kfunc.loaded import loaded_benchmark
from kbench.kinds.registry import kind_of
from kbench.report.run_json import kernel_text, profile_json, run_context_json, run_json
from kbench.store.db import Store
from kbench.targets.base import Target, TargetError
from kbench.targets.factory import make_target, target_cpus
from kbench.targets.local_kmod import LOCAL_KERNEL_HINT, what_loads_locally
from kbench.targets.suite_runner import suite_tools
from kbench.targets.vm.errors import ModuleBuildError
from kbench.targets.vm_target import VmTarget
from kbench.trace.tracking import parse_track, tracked


@click.command("run")
@click.argument("benchmark", shell_complete=complete_benchmarks)
@click.option(
    "-p", "--param", "params", multiple=True, type=KeyValue(), help="Benchmark parameter KEY=VALUE (repeatable)."
)
@click.option("--samples", type=click.IntRange(min=1), help="Count mode: number of samples (default 10000).")
@click.option("--duration", type=Duration(), help="Duration mode: sample for this long (e.g. 5s).")
@click.option("--warmup", type=Warmup(), help="Warm-up as a count (1000) or a duration (0.5s).")
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    help="Operations per sample (default: calibrated so a sample is >= 100x the timer resolution).",
)
@click.option("--cpu", type=click.IntRange(min=0), help="Pin the measuring thread to this CPU.")
@click.option(
    "--iterations", type=click.IntRange(min=1), default=1, show_default=True,
    help="Whole-tool benchmarks (hackbench, stress-ng, fio, sysbench): fresh runs of the tool.",
)
@click.option("--subtract-overhead", is_flag=True, help="Subtract the empty timed region's median from every sample.")
@click.option(
    "--tag", "tags", multiple=True, help="Label the run (repeatable); filter with `kbench results --tag`."
)
@click.option(
    "--hist", type=click.Choice(["linear", "log2"]), default="linear", show_default=True, help="Histogram bins."
)
@click.option(
    "--kernel",
    metavar="SPEC",
    help="Run in this kernel booted in qemu: deb:<release> (e.g. deb:6.1.0-56-amd64), a bzImage "
    "or a kernel build tree. Default: the running kernel.",
)
@click.option(
    "--module", "modules", multiple=True, type=click.Path(exists=True, path_type=Path),
    help="With --kernel: build (NAME.c or a module directory) and load a module of your own that "
    "registers benchmarks through kbench.h; run them as kfunc.NAME (see `kbench kmod new`).",
)
@click.option(
    "--track", metavar="WHAT",
    help="Also record what entered the kernel and where the CPU went: entries, utilisation or "
    "entries,utilisation (kbench.ko in a guest, tracefs on this kernel; see README).",
)
@click.option(
    "--commit", metavar="SHA|DIR",
    help="The git commit measured, or a checkout whose HEAD it is (history series carry it). "
    "Default: HEAD of a --kernel build tree that is a git checkout.",
)
@click.option("--label", metavar="TEXT", help="A free name for the version measured (shown in history).")
@click.option(
    "--profile", "profile", is_flag=True,
    help="After the run, profile the benchmark in a run of its own (perf record: call graphs, kernel and user "
    "symbols; in a guest, the guest's perf) and store it with the run; `kbench show RUN --flame FILE.svg` "
    "draws it.",
)
@click.option(
    "--counters/--no-counters", default=None,
    help="perf event counters around the measured region: task-clock, context switches, migrations, page "
    "faults and, where the machine has a PMU, cycles, instructions, branches and caches "
    "(default: on for syscall.*, command and kfunc.* (counted inside kbench.ko), whose cost was measured "
    "negligible, off for suites and will-it-scale.*; docs/PERFORMANCE.md has their cost).",
)
@click.option(
    "--ignore-failure", is_flag=True,
    help="Time failed executions too (a non-zero exit, a death by signal, a system call's error) and count "
    "them; by default the first one fails the run (exit 12) and nothing of it is timed.",
)
@click.option(
    "--local-kernel", is_flag=True,
    help="kfunc benchmarks without --kernel: allow building kbench.ko and loading it into the running kernel.",
)
@click.option(
    "--max-instances", type=click.IntRange(min=1), default=DEFAULT_MAX_INSTANCES, show_default=True,
    help="Job files: refuse a matrix of more instances than this.",
)
@click.option("--no-hist", "no_hist", is_flag=True, help="Leave the histogram and the CDF out of the text report.")
@click.option("-q", "--quiet", is_flag=True,
              help="Print one line: benchmark, median, unit, n and the run id (per instance for a job file).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the text report.")
@click.option("--metric", type=click.Choice(["time", "instructions"]), default="time", show_default=True,
              help="instructions: count the instructions of a command, syscall.* or kfunc.* per operation instead "
              "of timing them (the PMU, else valgrind; in a --kernel guest kbench's TCG plugin; "
              "docs/instructions.md).")
@pass_context
def run_cmd(
    ctx: Context,
    benchmark: str,
    params: tuple[tuple[str, str], ...],
    samples: int | None,
    duration: float | None,
    warmup: ParsedWarmup | None,
    batch: int | None,
    cpu: int | None,
    iterations: int,
    subtract_overhead: bool,
    tags: tuple[str, ...],
    hist: str,
    kernel: str | None,
    modules: tuple[Path, ...],
    track: str | None,
    commit: str | None,
    label: str | None,
    profile: bool,
    counters: bool | None,
    ignore_failure: bool,
    local_kernel: bool,
    max_instances: int,
    no_hist: bool,
    quiet: bool,
    as_json: bool,
    metric: str,
) -> None:
    """Run BENCHMARK (see `kbench list`) or every instance of a job FILE.yaml; store every sample.

    A job file (docs/jobs.md) carries its own settings: options other than --commit,
    --label and --json are not used with it.
    """
    if quiet and as_json:
        raise click.UsageError("give --quiet or --json, not both")
    commit = _measured_commit(commit, kernel)
    if label is not None and not 0 < len(label) <= LABEL_MAX:
        raise click.BadParameter(f"must be 1 to {LABEL_MAX} characters, got {len(label)}", param_hint="--label")
    if is_job_file(benchmark):
        run_job_file(ctx, Path(benchmark), as_json, commit=commit, label=label, local_kernel=local_kernel,
                     max_instances=max_instances, quiet=quiet)
        return
    if modules and not kernel:
        raise click.UsageError("--module loads a module into a kernel booted in qemu: give --kernel too")
    tracking = _tracking(track)
    with user_errors():
        # Check everything that can be checked before a VM boots; a user module's
        # benchmarks are known only once it is loaded.
        known = None if modules else lookup(benchmark)
        if known is not None:
            known.validate_params(dict(params))
        counting = metric == "instructions"
        in_kernel = kind_of(known).in_kernel if known else True  # a module of one's own: in-kernel benchmarks
        if known is not None and counting:
            known = counted(known)
        request = RunRequest(
            benchmark=known.name if known else benchmark,
            params=dict(params),
            samples=samples,
            duration_s=duration,
            warmup_samples=warmup.samples if warmup else None,
            warmup_duration_s=warmup.duration_s if warmup else None,
            batch=batch,
            cpu=cpu,
            subtract_overhead=subtract_overhead,
            iterations=iterations,
            tags=tags,
            commit=commit,
            label=label,
            ignore_failure=ignore_failure,
        )
        kind = kind_of(known) if known else kfunc.KIND  # a module of one's own: its in-kernel benchmarks
        request = replace(request, counters=kind.counters_by_default if counters is None else counters)
        if counting:
            request = counted_request(known or counted(kfunc_placeholder(benchmark)), replace(request, counters=False))
            kind = instructions.KIND
        if counters and not kind.counted:
            err_console.print(literal(f"warning: --counters: not taken for {kind.name} benchmarks (syscalls, "
                                      "commands, suites and in-kernel benchmarks are counted)"), highlight=False)
        problems = request_problems(request, kind.limits, target_cpus(kernel))
        if problems:
            raise BadRequest("; ".join(str(p) for p in problems))
    if counting and in_kernel and not kernel:
        with user_errors():
            check_local_kernel_counting(benchmark)
    if in_kernel and not kernel and not local_kernel:
        _agree_to_local_kernel(benchmark)
        local_kernel = True
    store = _writable_store(ctx)
    tools = suite_tools([known] if known is not None else [],
                        perf=needs_perf([known] if known is not None else [], counters=request.counters,
                                        profile=profile))
    suite_only = known is not None and kind_of(known).whole_tool
    with user_errors(), _started(store, request, kernel, modules, make_target(
            kernel, modules, local_kernel=local_kernel, suite_tools=tools, with_module=not suite_only,
            count_instructions=counting)) as target:
        bench = known or _lookup(benchmark, target)
        if counting:
            bench = counted(bench)
        request = replace(request, benchmark=bench.name)
        bench.validate_params(request.params)
        with Progress(
            label_column(),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
            disable=not err_console.is_terminal or as_json or quiet,
        ) as bar:
            task = bar.add_task(bench.name, total=None)
            result = execute_run(
                store,
                bench,
                request,
                tracked(target, tracking),
                progress=lambda done, total: bar.update(task, completed=done, total=total),
            )
        profile_problem = _profile(store, result.run_id, target, bench, request) if profile else None
    with user_errors():
        report = stored_run(store, result)
    extra = run_context_json(report.record)
    if profile:
        extra.update(profile_json(stored_profile(store, result.run_id), profile_problem))
    if as_json:
        emit_json(run_json(report, extra=extra))
    elif quiet:
        render_quiet(out_console(), report, bench.name)
    else:
        render_run(out_console(), report, hist, histogram=not no_hist)
        ran_on = report.record.target or {}
        out_console().print(literal(f"kernel {ran_on.get('kernel_release', '?')}{kernel_text(ran_on)}"),
                            highlight=False)
        if profile:
            render_profile(out_console(), stored_profile(store, result.run_id), profile_problem, report.run_id)
    if result.status == "interrupted":
        sys.exit(interrupts.exit_status())


@contextlib.contextmanager
def _started(
    store: Store, request: RunRequest, kernel: str | None, modules: tuple[Path, ...],
    target: AbstractContextManager[Target],
) -> Iterator[Target]:
    """``target`` entered; a module of the user's that does not compile is stored as a ``failed``
    run with the compiler's output (docs/exit-codes.md, exit 3) before the error goes on."""
    try:
        started = target.__enter__()
    except TargetError as exc:
        if isinstance(exc, ModuleBuildError) or isinstance(exc.__cause__, ModuleBuildError):
            with contextlib.suppress(Exception):  # the compiler's error matters more than the store's
                store_failed_start(store, request, _unstarted_target(kernel, modules), str(exc))
        raise
    with contextlib.ExitStack() as stack:
        stack.push(target)
        yield started


def _unstarted_target(kernel: str | None, modules: tuple[Path, ...]) -> dict[str, Any]:
    """The stored target of a guest that never booted: its kernel as resolved (cached by then);
    its version string is unknown (the guest's uname never ran)."""
    from kbench.targets.vm import default_cache_dir, resolve_kernel

    release = (kernel or "").removeprefix("deb:")
    with contextlib.suppress(Exception):
        release = resolve_kernel(kernel or "", default_cache_dir()).release
    return {"kind": "vm", "kernel_release": release, "kernel_version": "", "accel": None,
            "details": {"spec": kernel, "modules": [str(module) for module in modules], "booted": False}}


def _profile(store: Store, run_id: int, target: Target, bench: Benchmark, request: RunRequest) -> str | None:
    """Profile the run just stored (``kbench.engine.profiling``); why not, when it could not be."""
    from kbench.engine.profiling import profile_run
    from kbench.targets.base import TargetError

    with err_console.status("profiling (a run of its own, under perf record)"):
        try:
            profile_run(store, run_id, target, bench, request)
        except TargetError as exc:
            return str(exc)
    return None


def _agree_to_local_kernel(benchmark: str) -> None:
    """Say what a local kfunc run loads into this machine's kernel; go on only if the user agrees."""
    message = what_loads_locally(benchmark)
    if not sys.stdin.isatty() or not err_console.is_terminal:
        fail(f"{message}; {LOCAL_KERNEL_HINT}", exit_codes.USAGE)
    err_console.print(literal(message + "."), highlight=False)
    if not click.confirm("Load it into this machine's kernel?", default=False, err=True):
        fail("nothing was loaded (use --kernel deb:<release> to run it in a VM)", exit_codes.USAGE)


def _writable_store(ctx: Context) -> Store:
    with user_errors():
        return ctx.store


def _tracking(track: str | None) -> tuple[str, ...]:
    if track is None:
        return ()
    try:
        return parse_track(track)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--track") from None


def _measured_commit(commit: str | None, kernel: str | None) -> str | None:
    from kbench.history.versions import BadCommit, build_tree_commit, resolve_commit

    if commit is None:
        return build_tree_commit(kernel)
    try:
        return resolve_commit(commit)
    except BadCommit as exc:
        raise click.BadParameter(str(exc), param_hint="--commit") from None


def _lookup(name: str, target: object | None) -> Benchmark:
    """The catalog's benchmark, or one a user module registered in the guest."""
    try:
        return lookup(name)
    except UnknownBenchmark:
        if isinstance(target, VmTarget):
            return loaded_benchmark(target, name)
        raise
