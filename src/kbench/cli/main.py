"""The ``kbench`` command line: parse, call the library, render.

The commands are listed in ``COMMANDS`` by the module that defines them; a command's
module is imported only when that command runs (``kbench --help`` imports none).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich.text import Text

from kbench import __version__, exit_codes, interrupts
from kbench.cli.console import PIPE_WIDTH as PIPE_WIDTH  # re-exported: their old home
from kbench.cli.console import TrimmedLines as TrimmedLines
from kbench.cli.console import err_console as err_console
from kbench.cli.console import out_console as out_console
from kbench.cli.errors import fail as fail  # re-exported: their old home
from kbench.cli.errors import user_errors as user_errors
from kbench.cli.lazy import LazyCommand, LazyGroup
from kbench.contract import json_document
from kbench.extras import ExtraMissing, missing_from
from kbench.store.errors import database_error_message

if TYPE_CHECKING:
    from kbench.store.db import Store

def literal(text: object) -> Text:
    """Outside text (paths, tool output, error messages) as it is, without markup, its
    control characters escaped (new lines kept)."""
    from kbench.contract.text import printable

    return Text(printable(text, lines=True))


def _warn(text: str) -> None:
    """A line on stderr for what the store did that the user should know (a damaged spill kept aside)."""
    err_console.print(Text.assemble(("warning:", "yellow"), " ", literal(text)), highlight=False)


class Context:
    def __init__(self, db_url: str | None):
        self.db_url = db_url
        self._store: Store | None = None
        self._reader: Store | None = None

    def database_in_use(self) -> str:
        """The database this command opened, to name it in an error ('' if none)."""
        opened = self._store or self._reader
        return opened.where if opened is not None else (self.db_url or "")

    @property
    def store(self) -> Store:
        """The results database, opened for writing (created if needed)."""
        from kbench.store.db import Store

        if self._store is None:
            from kbench.store.db import Store

            self._store = Store.open(self.db_url, on_note=_warn)
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


COMMANDS: dict[str, LazyCommand] = {
    "bisect": LazyCommand(
        "kbench.cli.bisect_cmd:bisect_group",
        "Find the first commit where a command got slower (or faster), with a statistical oracle.",
    ),
    "cache": LazyCommand(
        "kbench.cli.cache_cmds:cache_group",
        "kbench's cache of kernels, modules and boot images ($KBENCH_CACHE_DIR, ~/.cache/kbench).",
    ),
    "calibrate": LazyCommand(
        "kbench.cli.calibrate_cmd:calibrate_cmd",
        "Measure BENCHMARK (or --command CMD) against itself with the design `kbench compare` uses, "
        "store the noise, and report the smallest change it can detect and the equivalence margin "
        "compare will use for it from now on.",
    ),
    "compare": LazyCommand(
        "kbench.cli.compare_cmd:compare_cmd",
        "Compare programs (--command A --command B), configurations (BENCH -p KEY=V1|V2), kernels "
        "(--kernel A --kernel B BENCH) or stored runs (--runs 1,2,3 --runs 4,5,6): a verdict per metric "
        "- regression, improvement, no change or inconclusive with its reason - with the change, its "
        "confidence interval and p-value, and the design that measured it.",
    ),
    "crosscheck": LazyCommand(
        "kbench.cli.crosscheck_cmd:crosscheck_cmd",
        "Measure BENCHMARK's quantity by two independent methods in one session and say if they agree.",
    ),
    "export": LazyCommand(
        "kbench.cli.export_cmd:export_cmd",
        "Export a run with all its raw samples (JSON, CSV, Parquet), runs as hyperfine JSON, pyperf JSON or Go "
        "benchmark text, or a table of runs (--runs).",
    ),
    "finding": LazyCommand(
        "kbench.cli.finding_cmd:finding_cmd",
        "Show finding N of `kbench watch` (its culprit, change, status and log), or set its status by hand.",
    ),
    "fleet": LazyCommand(
        "kbench.cli.fleet_cmd:fleet_group",
        "Run jobs on many test machines: Celery + Redis queues per machine class, runs in one PostgreSQL store "
        "(see docs/fleet.md).",
    ),
    "history": LazyCommand(
        "kbench.cli.history_cmd:history_cmd",
        "List the series of stored runs (benchmark + parameters + metric + machine + target), points newest "
        "last, with their change points (E-divisive means, t-test).",
    ),
    "import": LazyCommand(
        "kbench.cli.import_cmd:import_cmd",
        "Store the runs in FILES: kbench recovery files, hyperfine and pyperf JSON.",
    ),
    "job": LazyCommand(
        "kbench.cli.job_cmds:job_group",
        "Job files (YAML): check them and list their instances (see docs/jobs.md).",
    ),
    "kernel": LazyCommand(
        "kbench.cli.kernel_cmd:kernel_group",
        "Kernels kbench builds from source (the tree:PATH[@REV] kernel spec builds them too).",
    ),
    "kmod": LazyCommand(
        "kbench.cli.kmod_cmds:kmod_group",
        "Write, build and run your own in-kernel benchmarks (see kmod/include/kbench.h).",
    ),
    "list": LazyCommand(
        "kbench.cli.catalog_cmds:list_cmd", "List the benchmarks, their parameters, units and directions."
    ),
    "report": LazyCommand(
        "kbench.cli.report_cmd:report_group",
        "Reports over every stored run: new regressions (0-Day style) and release-over-release tables.",
    ),
    "results": LazyCommand("kbench.cli.results_cmds:results_cmd", "List stored runs, newest first."),
    "run": LazyCommand(
        "kbench.cli.run_cmd:run_cmd",
        "Run BENCHMARK (see `kbench list`) or every instance of a job FILE.yaml; store every sample.",
    ),
    "sensitivity": LazyCommand(
        "kbench.cli.sensitivity_cmd:sensitivity_cmd",
        "The matrix of p-values for every pair of configurations (commands, kernels, values of one "
        "parameter, or your own modules), A/A splits on the diagonal: which differences a method "
        "separates, and which it reports that are not there.",
    ),
    "serve": LazyCommand(
        "kbench.cli.serve_cmd:serve_cmd",
        "Serve a read-only web dashboard over the results database: every series with its change points, "
        "each run (histogram, CDF, context), two runs side by side, the regression report.",
    ),
    "show": LazyCommand(
        "kbench.cli.results_cmds:show_cmd",
        "Show a stored run: summary, histogram, CDF, context, counters, profile and warnings; or, with "
        "--over-time, the run in chunks over its samples and its time.",
    ),
    "sysinfo": LazyCommand(
        "kbench.cli.sysinfo_cmd:sysinfo_cmd", "Show the machine inventory and a checklist of the noise sources."
    ),
    "trace": LazyCommand(
        "kbench.cli.trace_cmd:trace_cmd",
        "Time FUNCTION… in place (kretprobes) while a workload runs; store every call's cycles.",
    ),
    "watch": LazyCommand(
        "kbench.cli.watch_cmd:watch_cmd",
        "Follow BRANCHes of REPO: build every new commit (first-parent order) in a worktree of kbench's own, run "
        "JOB there and store the runs. A change point of a series is only a candidate: it is confirmed by "
        "measuring the builds on either side of it side by side now, bisected when its range holds more than one "
        "commit, and its culprit measured once more against its parent. Only then is it a regression, mailed "
        "into --outbox.",
    ),
    "worker": LazyCommand(
        "kbench.cli.worker_cmd:worker_cmd",
        "Register this machine (its sysinfo record) and run its class's tasks one at a time, each exactly as "
        "`kbench run` would, storing the runs in the fleet's database.",
    ),
    "tune": LazyCommand(
        "kbench.cli.tune_cmds:tune_cmd",
        "Set governor=performance, turbo off and ASLR off for benchmarking, or --reset.",
    ),
}
"""Every command: the module defining it and its one-line help (a test checks they agree)."""


@click.group(
    cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
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
    broker is unreachable, 9 a --fail-on verdict was found, 10 bisect: no reproducible difference, 11 bisect failed,
    12 a measured execution failed (non-zero exit or signal: never timed, see --ignore-failure),
    13 bisect: no confirmed culprit,
    15 a kernel kbench builds did not compile,
    16 an optional part this needs is not installed (the line names the pip command),
    130 interrupted by Ctrl-C, 143 stopped by SIGTERM (both keep every finished sample).
    See docs/exit-codes.md.
    """
    if db and "://" not in db:
        db = f"sqlite:///{Path(db).expanduser().resolve()}"
    ctx.obj = Context(db)


def emit_json(data: Any) -> None:
    """Print a ``--json`` document: with ``schema_version`` and UTC ISO-8601 times (see json_document)."""
    click.echo(json_document.dumps(data))


def main() -> None:
    from kbench.cli.blas_threads import load_numpy_with_one_thread

    load_numpy_with_one_thread()  # about 60 ms of CPU less for every command that reads samples
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
    except ExtraMissing as exc:
        fail(str(exc), exit_codes.EXTRA_MISSING)
    except ImportError as exc:  # an extra's module, imported by a command that did not ask first
        missing = missing_from(exc, _command_named(sys.argv[1:]))
        if missing is None:
            raise
        fail(str(missing), exit_codes.EXTRA_MISSING)
    except Exception as exc:  # a database error outside user_errors()
        message = database_error_message(exc)
        if message is None:
            raise
        fail(message, exit_codes.STORE_FAILED)
    sys.exit(code if isinstance(code, int) else 0)


def _command_named(args: list[str]) -> str:
    """``kbench NAME`` for the first of ``args`` that names a command, to say what needs an extra."""
    name = next((arg for arg in args if arg in COMMANDS), None)
    return f"kbench {name}" if name else "this command"


def _interrupted(exc: KeyboardInterrupt) -> NoReturn:
    status = interrupts.exit_status(exc)
    err_console.print("kbench: stopped by SIGTERM" if status == interrupts.EXIT_SIGTERM else "kbench: interrupted")
    sys.exit(status)
