"""``kbench run FILE.yaml``: validate, expand, run every instance, summarise."""

from __future__ import annotations

from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from kbench.cli.job_cmds import default_cpu_count, job_errors
from kbench.cli.main import Context, emit_json, err_console, out_console
from kbench.engine.job_runner import run_job
from kbench.jobs import JobInstance, expand_job
from kbench.report.job_summary import instance_rows, job_json, scaling_curves, scaling_lines
from kbench.targets.factory import make_target


def run_job_file(
    ctx: Context, path: Path, as_json: bool, *, commit: str | None = None, label: str | None = None
) -> None:
    with job_errors():
        instances = expand_job(path, cpu_count=default_cpu_count())
        store = ctx.store
        total = sum(1 if _is_suite(i) else i.iterations for i in instances)
        with Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=err_console, transient=True, disable=not err_console.is_terminal,
        ) as bar:
            task = bar.add_task(path.name, total=total)

            def on_trial(instance: JobInstance, trial: int) -> None:
                if trial or instance is not instances[0]:
                    bar.advance(task)
                bar.update(task, description=f"{instance.id} {instance.benchmark}")

            entries = run_job(store, instances, make_target, on_trial, commit=commit, label=label)
    if as_json:
        emit_json(job_json(entries))
        return
    console = out_console()
    columns, rows = instance_rows(entries)
    table = Table(box=None, pad_edge=False, title=f"{path} — {len(entries)} instances", title_justify="left")
    for name in columns:
        table.add_column(name, justify="right" if name in ("median", "runs") else "left")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    for name, points in scaling_curves(entries).items():
        console.print()
        for line in scaling_lines(name, points):
            console.print(line, highlight=False)


def _is_suite(instance: JobInstance) -> bool:
    from kbench.catalog.benchmarks import lookup

    return lookup(instance.benchmark).kind == "suite"
