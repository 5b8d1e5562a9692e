"""The ``kbench`` command line: parse, call the library, render."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich.console import Console
from rich.text import Text

from kbench import __version__, interrupts
from kbench.catalog.benchmarks import BadParameter, UnknownBenchmark
from kbench.cli import exit_codes
from kbench.engine.request import BadRequest
from kbench.native import NativeToolMissing
from kbench.store.errors import RunNotFound, StoreError, database_error_message
from kbench.targets.base import TargetError

if TYPE_CHECKING:
    from kbench.store.db import Store

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
    """Print ``kbench: error: MESSAGE`` on stderr and exit with ``code``.

    The message is printed literally: it often carries outside text (a compiler's
    output, a tool's error, the guest console, a path) that must not be read as markup.
    """
    err_console.print(Text.assemble(("kbench: error:", "bold red"), " ", message), highlight=False)
    sys.exit(code)


def literal(text: object) -> Text:
    """Outside text (paths, tool output, error messages) as it is, without markup."""
    return Text(str(text))


@contextmanager
def user_errors() -> Iterator[None]:
    """Map library exceptions to one clear line and a documented exit code."""
    try:
        yield
    except (UnknownBenchmark, BadParameter, BadRequest) as exc:
        fail(str(exc), exit_codes.USAGE)
    except RunNotFound as exc:
        fail(str(exc), exit_codes.NOT_FOUND)
    except StoreError as exc:  # SamplesNotStored too: its message names the recovery file
        fail(str(exc), exit_codes.STORE_FAILED)
    except (TargetError, NativeToolMissing) as exc:
        fail(str(exc), exit_codes.MEASUREMENT_FAILED)
    except Exception as exc:
        message = database_error_message(exc, _database_in_use())
        if message is None:
            raise
        fail(message, exit_codes.STORE_FAILED)


def _database_in_use() -> str:
    """The database this command opened, to name it in an error ('' if none)."""
    click_context = click.get_current_context(silent=True)
    context = click_context.find_object(Context) if click_context is not None else None
    if context is None:
        return ""
    opened = context._store or context._reader
    return opened.where if opened is not None else (context.db_url or "")


class Context:
    def __init__(self, db_url: str | None):
        self.db_url = db_url
        self._store: Store | None = None
        self._reader: Store | None = None

    @property
    def store(self) -> Store:
        """The results database, opened for writing (created if needed)."""
        from kbench.store.db import Store

        if self._store is None:
            self._store = Store.open(self.db_url)
        return self._store

    @property
    def reader(self) -> Store:
        """The results database for a command that only reads it: opened read-only, so a
        database on read-only media, or one this user may not write, can still be read."""
        from kbench.store.db import Store

        if self._store is not None:
            return self._store
        if self._reader is None:
            self._reader = Store.open(self.db_url, read_only=True)
        return self._reader


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
    Exit codes: 0 ok, 2 usage error (bad option, unknown benchmark or parameter, a limit
    exceeded, an output path that cannot be written), 3 measurement failed, 4 run not
    found, 5 results database error, 6 a tuning knob could not be changed, 7 the fleet's
    broker is unreachable, 10 bisect: no reproducible difference, 11 bisect failed,
    130 interrupted by Ctrl-C, 143 stopped by SIGTERM (both keep every finished sample).
    See docs/exit-codes.md.
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
        cache_cmds,
        calibrate_cmd,
        catalog_cmds,
        compare_cmd,
        crosscheck_cmd,
        fleet_cmd,
        history_cmd,
        import_cmd,
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
    cli.add_command(import_cmd.import_cmd)
    cli.add_command(job_cmds.job_group)
    cli.add_command(tune_cmds.tune_cmd)
    cli.add_command(kmod_cmds.kmod_group)
    cli.add_command(compare_cmd.compare_cmd)
    cli.add_command(calibrate_cmd.calibrate_cmd)
    cli.add_command(sensitivity_cmd.sensitivity_cmd)
    cli.add_command(bisect_cmd.bisect_group)
    cli.add_command(cache_cmds.cache_group)
    cli.add_command(history_cmd.history_cmd)
    cli.add_command(report_cmd.report_group)
    cli.add_command(serve_cmd.serve_cmd)
    cli.add_command(trace_cmd.trace_cmd)
    cli.add_command(crosscheck_cmd.crosscheck_cmd)
    cli.add_command(fleet_cmd.fleet_group)
    cli.add_command(worker_cmd.worker_cmd)


_register_commands()


def main() -> None:
    interrupts.install()
    try:
        code = cli.main(prog_name="kbench", standalone_mode=False)
    except click.exceptions.Abort as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, KeyboardInterrupt):
            _interrupted(cause)
        fail("aborted", 1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        _interrupted(exc)
    except Exception as exc:  # a database error outside user_errors()
        message = database_error_message(exc)
        if message is None:
            raise
        fail(message, exit_codes.STORE_FAILED)
    sys.exit(code if isinstance(code, int) else 0)


def _interrupted(exc: KeyboardInterrupt) -> NoReturn:
    status = interrupts.exit_status(exc)
    err_console.print("kbench: stopped by SIGTERM" if status == interrupts.EXIT_SIGTERM else "kbench: interrupted")
    sys.exit(status)
