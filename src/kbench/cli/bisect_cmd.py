"""``kbench bisect``: find the commit that changed a command's run time.

Exit codes besides the common ones: 10 no reproducible difference between the good and
the bad commit; 11 the bisection failed (a reference does not build, git refused).
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.text import Text

from kbench import exit_codes
from kbench.bisect import demo, session
from kbench.bisect.driver import DONE, FAILED, NO_DIFFERENCE, RUNNING, BisectError, Settings
from kbench.bisect.lab import METRICS
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
from kbench.bisect.session import COMMAND, KERNEL, MODULE, SessionPlan
from kbench.catalog.benchmarks import lookup
from kbench.cli.console import echo_literal, write_stdout
from kbench.cli.job_cmds import default_cpu_count
from kbench.cli.lazy import LazyCommand, LazyGroup
from kbench.cli.main import Context, emit_json, err_console, fail, pass_context, user_errors
from kbench.cli.needs import needs_extra
from kbench.cli.parsing import Duration, KeyValue
from kbench.cli.progress import LongWork, quiet_option
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.jobs import expand_job
from kbench.kernels.per_commit import TREE_IMAGE
from kbench.report.bisect_report import render_text, report_dict
from kbench.store.db import Store


def measure_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """What to build and measure at each commit: shared by ``start`` and ``oracle``."""
    options = [
        click.option("--build", "build", metavar="CMD",
                     help="Shell command that builds a commit (cwd: its worktree); non-zero marks it skip. "
                     "Required with --command; with --module it runs before the module is built."),
        click.option("--build-timeout", "build_timeout", type=Duration(), default=f"{DEFAULT_BUILD_TIMEOUT_S:g}s",
                     show_default="60 min", metavar="DURATION",
                     help="Kill a --build that runs longer than this (its process group) and mark the commit skip."),
        click.option("--command", "command", metavar="CMD",
                     help="Shell command to time (cwd: the worktree); one execution per sample."),
        click.option("--samples", type=click.IntRange(min=1),
                     help="Per trial: executions of --command (default 10), or samples of the module's "
                     "benchmark (default 2000)."),
        click.option("--trials", type=click.IntRange(min=1), default=Settings.trials, show_default=True,
                     help="Rounds (a trial each of the commit, good and bad) before the first decision on a commit."),
        click.option("--max-trials", type=click.IntRange(min=1), default=Settings.max_trials, show_default=True,
                     help="Rounds after which an undecided commit is judged weakly."),
        click.option("--metric", type=click.Choice(METRICS), default="wall", show_default=True,
                     help="Trial statistic: median wall time per execution, or median user+system CPU time of "
                     "the command (robust to other load on the machine); instructions: the command's, --module's "
                     "or --benchmark's instructions per operation, counted (valgrind or the PMU here, kbench's TCG "
                     "plugin in a guest; docs/instructions.md)."),
        click.option("--seed", type=int, default=0, show_default=True, help="Seed of the interleaving order."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def output_options(command: Callable[..., Any]) -> Callable[..., Any]:
    command = click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path),
                           callback=needs_extra("plots", "kbench bisect --html (its plots)"),
                           help="Also write the report as a self-contained HTML page.")(command)
    return click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")(command)


def check_measured(
    *, build: str | None, command: str | None, module: str | None, kernel: str | None, kernel_image: str | None,
    kernel_modules: str | None, benchmark: str | None, bench_params: tuple[tuple[str, str], ...], metric: str,
) -> str:
    """COMMAND, MODULE or KERNEL, from a consistent set of options (else a usage error naming the problem)."""
    if kernel_image == TREE_IMAGE:
        if build or kernel_modules:
            raise click.UsageError("--kernel-tree builds each commit's kernel itself: it goes without --build and "
                                   "--kernel-modules (--kernel-from-build takes your own build command)")
        build = "kbench"
    if kernel_image is not None:
        if module or command or kernel:
            raise click.UsageError("--kernel-from-build measures --benchmark in each commit's own kernel: "
                                   "it goes without --module, --command and --kernel")
        if not benchmark and build == "kbench":
            raise click.UsageError("--kernel-tree needs --benchmark (what to measure in each commit's kernel, "
                                   "e.g. syscall.getppid) or --job")
        if not build or not benchmark:
            raise click.UsageError("--kernel-from-build needs --build (the command that builds the kernel) "
                                   "and --benchmark (what to measure in it, e.g. syscall.getppid)")
        if metric not in ("wall", "instructions"):
            raise click.UsageError("--metric cpu applies to --command; a kernel's benchmark is timed per operation, "
                                   "or counted with --metric instructions")
        lookup(benchmark)  # an unknown name is a usage error with a did-you-mean
        return KERNEL
    if kernel_modules is not None:
        raise click.UsageError("--kernel-modules goes with --kernel-from-build")
    if module is None:
        for option, value in (("--kernel", kernel), ("--benchmark", benchmark), ("--param", bench_params)):
            if value:
                raise click.UsageError(f"{option} goes with --module or --kernel-from-build")
        if not command or not build:
            raise click.UsageError("give --build and --command (user space), or --module and --kernel "
                                   "(a benchmark module measured in a kernel booted in qemu)")
        return COMMAND
    if command:
        raise click.UsageError("--command and --module exclude each other: one thing is measured per bisection")
    if not kernel:
        raise click.UsageError("--module needs --kernel: the kernel to build it for and boot in qemu")
    if metric not in ("wall", "instructions"):
        raise click.UsageError("--metric cpu applies to --command; a module's benchmark is timed in cycles per "
                               "call, or counted with --metric instructions")
    return MODULE


def benchmark_of_job(
    job_file: Path, benchmark: str | None, bench_params: tuple[tuple[str, str], ...], samples: int | None,
) -> tuple[str, tuple[tuple[str, str], ...], int | None]:
    """(benchmark, parameters, samples) of a job file's one instance, for a kernel-side bisection."""
    if benchmark or bench_params or samples:
        raise click.UsageError("--job gives the benchmark, its parameters and samples: drop --benchmark, "
                               "-p and --samples")
    with user_errors():
        instances = expand_job(job_file, cpu_count=default_cpu_count())
    if len(instances) != 1:
        raise click.UsageError(f"{job_file} expands to {len(instances)} instances; a bisection measures one "
                               f"(`kbench job expand {job_file}` lists them)")
    [instance] = instances
    if instance.runtime_s is not None:
        raise click.UsageError(f"{job_file}: a bisection counts samples per trial; give `samples`, not a runtime")
    if instance.target != "local":
        raise click.UsageError(f"{job_file}: `target: {instance.target}` has no place in a bisection: the kernel "
                               "is --kernel or the commit's own build")
    return instance.benchmark, tuple(instance.run_params().items()), instance.samples


def check_trial_range(trials: int, max_trials: int) -> None:
    if trials > max_trials:
        raise click.BadParameter(f"--trials {trials} is more than --max-trials {max_trials}", param_hint="--trials")


ORACLE = LazyCommand(
    "kbench.cli.bisect_oracle_cmd:oracle_cmd",
    "Judge HEAD against GOOD and BAD: exit 0 good, 1 bad, 125 skip, 255 kbench failed.",
)


@click.group("bisect", cls=LazyGroup, lazy={"oracle": ORACLE})
def bisect_group() -> None:
    """Find the first commit where a command got slower (or faster), with a statistical oracle.

    \b
    Exit codes: 0 done, 10 no reproducible difference between --good and --bad,
    11 the bisection failed (a reference does not build, git refused), and the common ones.
    """


@bisect_group.command("start")
@click.option("--good", required=True, metavar="REV", help="A commit with the old performance.")
@click.option("--bad", required=True, metavar="REV", help="A later commit with the new performance.")
@click.option("--repo", type=click.Path(file_okay=False, exists=True, path_type=Path), default=Path("."),
              show_default=True, help="The git repository (its checkout is never touched).")
@measure_options
@click.option("--module", metavar="PATH", help="Kernel side: the repository's benchmark module (NAME.c using "
              "kbench.h, or a module directory), built for --kernel at every commit and measured in it.")
@click.option("--kernel", metavar="SPEC", help="With --module: the kernel booted in qemu (e.g. deb:6.1.0-56-amd64).")
@click.option("--kernel-from-build", "kernel_image", metavar="PATH", help="Kernel tree: after --build, the "
              "kernel image in the worktree (arch/x86/boot/bzImage, or . for the build tree), booted in qemu at "
              "every trial to run --benchmark.")
@click.option("--kernel-tree", type=click.Path(file_okay=False, exists=True, path_type=Path),
              help="A kernel tree's git repository whose commits kbench builds itself (no --build): each commit's "
              "kernel is tree:REPO@SHA, built incrementally in kbench's build directory (kbench kernel build) and "
              "booted in qemu at every trial to run --benchmark; a commit that does not build is skip.")
@click.option("--kernel-modules", metavar="PATH", help="With --kernel-from-build: the modules the guest needs "
              "(virtio_pci, virtio_console) when they are not built in: a modules_install directory in the worktree.")
@click.option("--boot-timeout", type=click.FloatRange(min=5), default=120.0, show_default=True,
              help="With --kernel-from-build: seconds a kernel may take to boot before it counts as hung (skip).")
@click.option("--benchmark", metavar="NAME", help="What to measure in the kernel: with --kernel-from-build a "
              "catalog benchmark (syscall.getppid, kfunc.*), with --module the kfunc benchmark it registers "
              "(default: the one it adds).")
@click.option("-p", "--param", "bench_params", multiple=True, type=KeyValue(),
              help="With --module, --kernel-from-build or --kernel-tree: benchmark parameter KEY=VALUE "
              "(repeatable).")
@click.option("--job", "job_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="With --module, --kernel-from-build or --kernel-tree: a job file of one instance giving the "
              "benchmark, its parameters and samples (instead of --benchmark, -p and --samples).")
@click.option("--check-trials", type=click.IntRange(min=5), default=Settings.check_trials, show_default=True,
              help="Most rounds of good and bad in the initial check (it stops as soon as they differ).")
@click.option("--alpha", type=click.FloatRange(min=0.001, max=0.2), default=DEFAULT_ALPHA, show_default=True,
              help="Level of the good-vs-bad check and of the reported p values.")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the worktrees go (default: $XDG_CACHE_HOME/kbench/bisect/ID).")
@click.option("--fleet", "fleet_queue", metavar="CLASS", callback=needs_extra("fleet", "kbench bisect --fleet"),
              help="With --command: build and measure on fleet workers of this machine class (kbench worker "
              "--allow-command), each round's commit, good and bad on one machine; the bisection is stored in the "
              "fleet's database (docs/fleet.md).")
@click.option("--fleet-repo", metavar="URL", help="With --fleet: the repository as the workers reach it "
              "(default: --repo's path).")
@output_options
@quiet_option
@pass_context
def start_cmd(
    ctx: Context, good: str, bad: str, repo: Path, build: str | None, build_timeout: float, command: str | None,
    samples: int | None, trials: int, max_trials: int, metric: str, seed: int, module: str | None, kernel: str | None,
    kernel_image: str | None, kernel_tree: Path | None, kernel_modules: str | None, boot_timeout: float,
    benchmark: str | None, bench_params: tuple[tuple[str, str], ...], job_file: Path | None, check_trials: int,
    alpha: float, workdir: Path | None, fleet_queue: str | None, fleet_repo: str | None, as_json: bool,
    html_path: Path | None, quiet: bool,
) -> None:
    """Check that GOOD and BAD differ, then binary-search the commits between them.

    \b
    User space: --build CMD --command CMD (the command timed in each commit's worktree).
    A benchmark module: --module PATH --kernel SPEC [--benchmark NAME] [-p K=V] (an
    out-of-tree module built per commit, measured inside one kernel booted in qemu).
    A kernel tree: --build CMD --kernel-from-build PATH --benchmark NAME [-p K=V] (each
    commit's kernel booted in qemu for every trial; a panic or hang skips the commit),
    or --kernel-tree REPO --benchmark NAME [-p K=V] (kbench builds each commit's kernel).
    On fleet workers: --fleet CLASS with --build and --command.
    """
    if kernel_tree is not None:
        if kernel_image is not None:
            raise click.UsageError("--kernel-tree and --kernel-from-build exclude each other: kbench builds the "
                                   "kernels, or your --build does")
        if repo != Path(".") and repo.resolve() != kernel_tree.resolve():
            raise click.UsageError("--kernel-tree names the repository: drop --repo")
        repo, kernel_image = kernel_tree, TREE_IMAGE
    repo = repo.resolve()
    check_trial_range(trials, max_trials)
    if job_file is not None:
        if not (module or kernel_image):
            raise click.UsageError("--job goes with --module, --kernel-from-build or --kernel-tree (what to "
                                   "measure in a kernel)")
        benchmark, bench_params, samples = benchmark_of_job(job_file, benchmark, bench_params, samples)
    with user_errors():
        kind = check_measured(build=build, command=command, module=module, kernel=kernel, kernel_image=kernel_image,
                              kernel_modules=kernel_modules, benchmark=benchmark, bench_params=bench_params,
                              metric=metric)
    plan = SessionPlan(
        kind=kind, build=None if kernel_image == TREE_IMAGE else build, trials=trials, max_trials=max_trials,
        check_trials=check_trials, metric=metric,
        alpha=alpha, seed=seed, command=command, samples=samples, module=module, kernel=kernel,
        kernel_image=kernel_image, kernel_modules=kernel_modules, boot_timeout=boot_timeout, benchmark=benchmark,
        bench_params=dict(bench_params), build_timeout_s=build_timeout,
    )
    if fleet_queue is not None or fleet_repo is not None:
        _start_on_fleet(fleet_queue, fleet_repo, kind, repo, good, bad, plan, workdir, as_json, html_path, quiet)
        return
    with user_errors():
        try:
            bisection = session.start(ctx.store, repo, good, bad, plan, workdir=workdir)
        except BisectError as exc:
            fail(str(exc), exit_codes.BISECT_FAILED)
        if not quiet:
            err_console.print(f"bisection {bisection.id}: {len(bisection.params['commits'])} commits after "
                              f"{bisection.good[:12]} up to {bisection.bad[:12]}", highlight=False)
        _run(ctx.store, bisection.id, as_json, html_path, quiet)


def _start_on_fleet(
    fleet_queue: str | None, fleet_repo: str | None, kind: str, repo: Path, good: str, bad: str, plan: SessionPlan,
    workdir: Path | None, as_json: bool, html_path: Path | None, quiet: bool,
) -> None:
    """``start --fleet CLASS``: the bisection's builds and rounds as fleet tasks (cli/bisect_fleet.py)."""
    if fleet_queue is None:
        raise click.UsageError("--fleet-repo goes with --fleet")
    if kind != COMMAND:
        raise click.UsageError("--fleet measures --build/--command bisections; a --module or kernel bisection "
                               "boots its kernels here (run it without --fleet)")
    from kbench.watch.preflight import credential_in_url

    if fleet_repo is not None and (why := credential_in_url(fleet_repo)) is not None:
        raise click.UsageError(why)
    from kbench.cli.bisect_fleet import fleet_store, start_on_fleet

    with user_errors():
        store, settings = fleet_store(fleet_queue)
        try:
            bisection = start_on_fleet(store, fleet_queue, repo=repo, repo_url=fleet_repo or str(repo), good=good,
                                       bad=bad, plan=plan, workdir=workdir)
        except BisectError as exc:
            fail(str(exc), exit_codes.BISECT_FAILED)
        if not quiet:
            err_console.print(f"bisection {bisection.id}: {len(bisection.params['commits'])} commits after "
                              f"{bisection.good[:12]} up to {bisection.bad[:12]}, measured on machine class "
                              f"{fleet_queue}", highlight=False)
    _run_fleet(store, settings, bisection.id, as_json, html_path, quiet)


def _run_fleet(store: Store, settings: Any, bisection_id: int, as_json: bool, html_path: Path | None,
               quiet: bool) -> None:
    from kbench.cli.bisect_fleet import run_on_fleet

    def log(text: str) -> None:
        if not quiet:
            err_console.print(f"bisect {bisection_id}: {text}", highlight=False, markup=False)

    with user_errors():
        try:
            row = run_on_fleet(store, settings, session.load(store, bisection_id), log)
        except BisectError as exc:
            fail(str(exc), exit_codes.BISECT_FAILED)
    _render(row, as_json, html_path)


@bisect_group.command("resume")
@click.argument("bisection_id", type=int, required=False)
@click.option("--fleet", "fleet_queue", metavar="CLASS", callback=needs_extra("fleet", "kbench bisect --fleet"),
              help="A bisection started with --fleet: go on in the fleet's database, on machines of CLASS.")
@output_options
@quiet_option
@pass_context
def resume_cmd(ctx: Context, bisection_id: int | None, fleet_queue: str | None, as_json: bool,
               html_path: Path | None, quiet: bool) -> None:
    """Continue a bisection (default: the latest) from its saved steps."""
    if fleet_queue is not None:
        _resume_on_fleet(fleet_queue, bisection_id, as_json, html_path, quiet)
        return
    with user_errors():
        bisection = session.load(ctx.store, bisection_id)
        if bisection.status != RUNNING:
            _render(dict(bisection.row), as_json, html_path)
            return
        if "fleet" in bisection.params:
            raise click.UsageError(f"bisection {bisection.id} measures on the fleet: resume it with --fleet "
                                   f"{bisection.params['fleet']['queue']}")
        _run(ctx.store, bisection.id, as_json, html_path, quiet)


def _resume_on_fleet(fleet_queue: str, bisection_id: int | None, as_json: bool, html_path: Path | None,
                     quiet: bool) -> None:
    from kbench.cli.bisect_fleet import fleet_store

    with user_errors():
        store, settings = fleet_store(fleet_queue)
        bisection = session.load(store, bisection_id)
        if bisection.status != RUNNING:
            _render(dict(bisection.row), as_json, html_path)
            return
        if "fleet" not in bisection.params:
            raise click.UsageError(f"bisection {bisection.id} was not started with --fleet: resume it where it ran")
        if bisection.params["fleet"]["queue"] != fleet_queue:
            store.update_bisection(bisection.id, params={**bisection.params, "fleet": {
                **bisection.params["fleet"], "queue": fleet_queue}})
    _run_fleet(store, settings, bisection.id, as_json, html_path, quiet)


@bisect_group.command("status")
@click.argument("bisection_id", type=int, required=False)
@output_options
@pass_context
def status_cmd(ctx: Context, bisection_id: int | None, as_json: bool, html_path: Path | None) -> None:
    """Show a bisection (default: the latest): its steps so far and, when done, the culprit."""
    with user_errors():
        _render(ctx.reader.get_bisection(bisection_id), as_json, html_path)


@bisect_group.command("demo")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--commits", type=click.IntRange(min=2), default=20, show_default=True)
@click.option("--culprit", type=int, default=13, show_default=True, help="The commit (0 = good) that slows the loop.")
@click.option("--broken", type=int, default=9, show_default=True, help="A commit that does not compile (-1: none).")
@click.option("--extra", type=click.FloatRange(min=0.0, max=10.0), default=0.05, show_default=True,
              help="How much more work the culprit's loop does (0.05: 5 %).")
def demo_cmd(directory: Path, commits: int, culprit: int, broken: int, extra: float) -> None:
    """Write a git repository of a small C program to bisect: one commit slows its hot loop."""
    try:
        shas = demo.make_demo_repo(directory, commits=commits, culprit=culprit,
                              broken=None if broken < 0 else broken, extra=extra)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    echo_literal(f"{directory}: {commits} commits; commit {culprit} ({shas[culprit][:12]}) adds {100 * extra:g} % "
               f"work to the hot loop" + (f", commit {broken} does not build" if broken >= 0 else "") + ". Try:")
    echo_literal(f"  kbench bisect start --repo {shlex.quote(str(directory))} --good {shas[0][:12]} --bad main "
               f"--build {shlex.quote(demo.BUILD)} --command {demo.COMMAND} --metric cpu")


@bisect_group.command("reset")
@click.argument("bisection_id", type=int, required=False)
@pass_context
def reset_cmd(ctx: Context, bisection_id: int | None) -> None:
    """Remove a bisection's worktrees; a running one is marked aborted."""
    with user_errors():
        bisection = session.load(ctx.store, bisection_id)
        aborted = session.reset(ctx.store, bisection)
        err_console.print(f"bisection {bisection.id}: worktrees removed" + (", aborted" if aborted else ""),
                          highlight=False)


def _run(store: Store, bisection_id: int, as_json: bool, html_path: Path | None, quiet: bool = False) -> None:
    def log(text: str) -> None:
        if not quiet:
            err_console.print(f"bisect {bisection_id}: {text}", highlight=False, markup=False)

    try:
        with LongWork(f"bisection {bisection_id}", quiet=quiet or as_json) as work:
            end = session.run(store, bisection_id, log, progress=work)
    except BisectError as exc:
        fail(str(exc), exit_codes.BISECT_FAILED)
    if end.problems:
        err_console.print(Text.assemble(("warning:", "bold yellow"),
                                        " the guest kernel logged problems during the bisection:\n  "
                                        + "\n  ".join(end.problems)), highlight=False)
    _render(dict(end.bisection.row), as_json, html_path)


def _render(record: dict[str, Any], as_json: bool, html_path: Path | None = None) -> None:
    report = report_dict(record)
    if html_path is not None:
        from kbench.report.bisect_html import render_bisect_html

        html_path.write_text(render_bisect_html(report))
        err_console.print(f"bisection {record['id']}: HTML report written to {html_path}", highlight=False)
    if as_json:
        emit_json(report)
    else:
        write_stdout(render_text(report))
    if record["status"] == NO_DIFFERENCE:
        sys.exit(exit_codes.NO_REPRODUCIBLE_DIFFERENCE)
    if record["status"] == FAILED:
        sys.exit(exit_codes.BISECT_FAILED)
    if record["status"] == DONE and not (record["result"] or {}).get("first_bad"):
        sys.exit(exit_codes.BISECT_INCONCLUSIVE)


