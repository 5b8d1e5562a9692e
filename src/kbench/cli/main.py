"""The ``kbench`` command line: parse, call the library, render."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import click
from rich.console import Console

from kbench import __version__
from kbench.catalog.benchmarks import BadParameter, UnknownBenchmark
from kbench.cli import exit_codes
from kbench.engine.request import BadRequest
from kbench.native import NativeToolMissing
from kbench.store.db import RunNotFound, Store, StoreError
from kbench.targets.base import TargetError

err_console = Console(stderr=True, soft_wrap=True)
PIPE_WIDTH = 200
"""Output that goes to a file or a pipe is not wrapped at 80 columns."""


def out_console() -> Console:
    """A console for stdout: the terminal's width, or PIPE_WIDTH when redirected."""
    console = Console(soft_wrap=True)
    if not console.is_terminal:
        console = Console(soft_wrap=True, width=PIPE_WIDTH)
    return console


def fail(message: str, code: int) -> NoReturn:
    err_console.print(f"[bold red]kbench: error:[/] {message}", highlight=False, markup=True)
    sys.exit(code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Map library exceptions to one clear line and a documented exit code."""
    try:
        yield
    except (UnknownBenchmark, BadParameter, BadRequest) as exc:
        fail(str(exc), exit_codes.USAGE)
    except RunNotFound as exc:
        fail(str(exc), exit_codes.NOT_FOUND)
    except StoreError as exc:
        fail(str(exc), exit_codes.STORE_FAILED)
    except (TargetError, NativeToolMissing) as exc:
        fail(str(exc), exit_codes.MEASUREMENT_FAILED)


class Context:
    def __init__(self, db_url: str | None):
        self.db_url = db_url
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store.open(self.db_url)
        return self._store


pass_context = click.make_pass_decorator(Context)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="KBENCH_DB",
    metavar="URL",
    help="Results database (SQLAlchemy URL or SQLite path). Default: "
    "$XDG_DATA_HOME/kbench/kbench.db. Env: KBENCH_DB.",
)
@click.version_option(__version__, prog_name="kbench")
@click.pass_context
def cli(ctx: click.Context, db: str | None) -> None:
    """kbench: time kernel functions, system calls and workloads, and judge the numbers.

    \b
    Exit codes: 0 ok, 2 usage error (bad option, unknown benchmark or parameter),
    3 measurement failed, 4 run not found, 5 results database error, 6 a tuning knob
    could not be changed, 7 the fleet's broker is unreachable, 10 bisect: no reproducible
    difference, 11 bisect failed, 130 interrupted.
    """
    if db and "://" not in db:
        db = f"sqlite:///{Path(db).expanduser().resolve()}"
    ctx.obj = Context(db)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


def _register_commands() -> None:
    from kbench.cli import (
        bisect_cmd,
        bisect_oracle_cmd,  # noqa: F401  (adds ``oracle`` to the bisect group)
        calibrate_cmd,
        catalog_cmds,
        compare_cmd,
        crosscheck_cmd,
        fleet_cmd,
        history_cmd,
        job_cmds,
        kmod_cmds,
        report_cmd,
        results_cmds,
        run_cmd,
        sensitivity_cmd,
        serve_cmd,
        trace_cmd,
        tune_cmds,
        worker_cmd,
    )

    cli.add_command(catalog_cmds.list_cmd)
    cli.add_command(catalog_cmds.sysinfo_cmd)
    cli.add_command(run_cmd.run_cmd)
    cli.add_command(results_cmds.show_cmd)
    cli.add_command(results_cmds.results_cmd)
    cli.add_command(results_cmds.export_cmd)
    cli.add_command(job_cmds.job_group)
    cli.add_command(tune_cmds.tune_cmd)
    cli.add_command(kmod_cmds.kmod_group)
    cli.add_command(compare_cmd.compare_cmd)
    cli.add_command(calibrate_cmd.calibrate_cmd)
    cli.add_command(sensitivity_cmd.sensitivity_cmd)
    cli.add_command(bisect_cmd.bisect_group)
    cli.add_command(history_cmd.history_cmd)
    cli.add_command(report_cmd.report_group)
    cli.add_command(serve_cmd.serve_cmd)
    cli.add_command(trace_cmd.trace_cmd)
    cli.add_command(crosscheck_cmd.crosscheck_cmd)
    cli.add_command(fleet_cmd.fleet_group)
    cli.add_command(worker_cmd.worker_cmd)


_register_commands()


def main() -> None:
    try:
        cli(prog_name="kbench")
    except KeyboardInterrupt:
        err_console.print("kbench: interrupted")
        sys.exit(exit_codes.INTERRUPTED)
