"""``kbench job``: check job files and list the instances they expand to."""

from __future__ import annotations

import os
from pathlib import Path

import click
from rich.table import Table

from kbench.cli.console import echo_literal
from kbench.cli.main import emit_json, out_console, user_errors
from kbench.jobs import JobInstance, expand_job, varying_keys
from kbench.jobs.expand import DEFAULT_MAX_INSTANCES


def default_cpu_count() -> int:
    """This machine's CPU count, for ``nr_task`` percentages and ``cpu`` bounds."""
    return os.cpu_count() or 1


def print_warnings(instances: list[JobInstance]) -> None:
    """The job's warnings (keys kbench recognises and does not apply), once each, on stderr."""
    for warning in dict.fromkeys(w for instance in instances for w in instance.warnings):
        echo_literal(f"warning: {warning}", err=True)  # job files are outside text


cpus_option = click.option(
    "--cpus", type=click.IntRange(min=1), metavar="N",
    help="Resolve nr_task percentages and check cpu for N CPUs (default: this machine's count).",
)
max_instances_option = click.option(
    "--max-instances", type=click.IntRange(min=1), default=DEFAULT_MAX_INSTANCES, show_default=True,
    help="Refuse a matrix of more instances than this.",
)


@click.group("job")
def job_group() -> None:
    """Job files (YAML): check them and list their instances (see docs/jobs.md)."""


@job_group.command("expand")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@cpus_option
@max_instances_option
@click.option("--json", "as_json", is_flag=True, help="Print every instance with all its fields as JSON.")
def expand_cmd(file: Path, cpus: int | None, max_instances: int, as_json: bool) -> None:
    """List the instances FILE expands to: id, benchmark and the keys that vary."""
    cpu_count = cpus or default_cpu_count()
    with user_errors():
        instances = expand_job(file, cpu_count=cpu_count, max_instances=max_instances)
    print_warnings(instances)
    varying = varying_keys(instances)
    if as_json:
        emit_json(
            {
                "file": str(file),
                "cpu_count": cpu_count,
                "varying": varying,
                "instances": [dict(instance.to_dict(), run_request=instance.to_run_request().to_dict())
                              for instance in instances],
            }
        )
        return
    _print_instances(instances, [key for key in varying if key != "benchmark"])
    axes = " × ".join(varying) or "a single instance"
    echo_literal(f"{len(instances)} instance{'s' if len(instances) != 1 else ''} ({axes}) for {cpu_count} CPUs")


def _print_instances(instances: list[JobInstance], columns: list[str]) -> None:
    table = Table(box=None, pad_edge=False, show_lines=False)
    table.add_column("id", style="bold")
    table.add_column("benchmark")
    for column in columns:
        table.add_column(column)
    for instance in instances:
        shown = instance.describe()
        table.add_row(instance.id, instance.benchmark + (" (control)" if instance.control else ""),
                      *(shown.get(column, "-") for column in columns))
    out_console().print(table)


@job_group.command("validate")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@cpus_option
@max_instances_option
def validate_cmd(file: Path, cpus: int | None, max_instances: int) -> None:
    """Check FILE completely (schema, values, limits, catalog); exit 2 listing every problem."""
    with user_errors():
        instances = expand_job(file, cpu_count=cpus or default_cpu_count(), max_instances=max_instances)
    print_warnings(instances)
    echo_literal(f"{file}: valid, {len(instances)} instance{'s' if len(instances) != 1 else ''}")
