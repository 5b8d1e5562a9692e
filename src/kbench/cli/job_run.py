"""``kbench run FILE.yaml``: validate, expand, run every instance, summarise."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from kbench import exit_codes, interrupts
from kbench.catalog.benchmarks import lookup
from kbench.cli.console import echo_literal, label_column
from kbench.cli.job_cmds import default_cpu_count, print_warnings
from kbench.cli.main import Context, emit_json, err_console, fail, out_console, user_errors
from kbench.engine.job_runner import InstanceRuns, run_job
from kbench.engine.target_factory import needs_perf, target_factory
from kbench.jobs import JobInstance, expand_job
from kbench.jobs.expand import DEFAULT_MAX_INSTANCES
from kbench.kinds.registry import kind_of
from kbench.report.job_summary import instance_rows, job_json, quiet_lines, scaling_curves, scaling_lines
from kbench.targets.factory import target_cpus
from kbench.targets.local_kmod import LOCAL_KERNEL_HINT


def run_job_file(
    ctx: Context, path: Path, as_json: bool, *, commit: str | None = None, label: str | None = None,
    local_kernel: bool = False, max_instances: int = DEFAULT_MAX_INSTANCES, quiet: bool = False,
) -> None:
    with user_errors():
        instances = expand_job(path, cpu_count=default_cpu_count(), max_instances=max_instances,
                               target_cpus=lambda spec: target_cpus(None if spec == "local" else spec))
    print_warnings(instances)
    local_kfunc = sorted(
        {i.benchmark for i in instances if i.target == "local" and kind_of(lookup(i.benchmark)).in_kernel}
    )
    if local_kfunc and not local_kernel:
        fail(f"{path}: {', '.join(local_kfunc)} would load kbench.ko into the running kernel: {LOCAL_KERNEL_HINT} "
             "(or give the job a kernel: deb:<release>)", exit_codes.USAGE)
    with user_errors():
        store = ctx.store
        total = sum(1 if _whole_tool(i) else i.iterations for i in instances)
        with Progress(
            label_column(), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err_console, transient=True, disable=not err_console.is_terminal or as_json or quiet,
        ) as bar:
            task = bar.add_task(path.name, total=total)

            def on_trial(instance: JobInstance, trial: int) -> None:
                if trial or instance is not instances[0]:
                    bar.advance(task)
                bar.update(task, description=f"{instance.id} {instance.benchmark}")

            perf = any(needs_perf([lookup(i.benchmark)], counters=i.counters, profile=i.profile) for i in instances)
            factory = target_factory((lookup(i.benchmark) for i in instances), local_kernel=local_kernel, perf=perf)
            entries = run_job(store, instances, factory, on_trial, commit=commit, label=label)
    interrupted = any(run.status == "interrupted" for entry in entries for run in entry.runs)
    if as_json:
        emit_json(job_json(entries))
    elif quiet:
        for line in quiet_lines(entries):
            echo_literal(line)
    else:
        _print_summary(path, entries)
    if interrupted:
        sys.exit(interrupts.exit_status())


def _print_summary(path: Path, entries: list[InstanceRuns]) -> None:
    console = out_console()
    columns, rows = instance_rows(entries)
    table = Table(box=None, pad_edge=False, title=Text(f"{path} — {len(entries)} instances"), title_justify="left")
    for name in columns:
        table.add_column(name, justify="right" if name in ("median", "runs") else "left")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    console.print(table)
    for name, points in scaling_curves(entries).items():
        console.print()
        for line in scaling_lines(name, points):
            console.print(Text(line), highlight=False)


def _whole_tool(instance: JobInstance) -> bool:
    return kind_of(lookup(instance.benchmark)).whole_tool
