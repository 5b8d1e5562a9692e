"""The ``kbench`` command line: parse, call the library, render.

The commands are listed in ``COMMANDS`` by the module that defines them; a command's
module is imported only when that command runs (``kbench --help`` imports none).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich.console import Console

from kbench import __version__
from kbench.cli import exit_codes
from kbench.cli.lazy import LazyCommand, LazyGroup
from kbench.contract.benchmark import BadParameter, UnknownBenchmark
from kbench.contract.request import BadRequest
from kbench.native import NativeToolMissing
from kbench.store.errors import RunNotFound, StoreError
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
            from kbench.store.db import Store

            self._store = Store.open(self.db_url)
        return self._store


pass_context = click.make_pass_decorator(Context)


COMMANDS: dict[str, LazyCommand] = {
    "bisect": LazyCommand(
        "kbench.cli.bisect_cmd:bisect_group",
        "Find the first commit where a command got slower (or faster), with a statistical oracle.",
    ),
    "calibrate": LazyCommand(
        "kbench.cli.calibrate_cmd:calibrate_cmd",
        "Measure BENCHMARK twice (two interleaved A/A sets), store the noise, and report the minimum "
        "detectable effect at 80% and 95% power for each trial budget.",
    ),
    "compare": LazyCommand(
        "kbench.cli.compare_cmd:compare_cmd",
        "Compare kernels (--kernel A --kernel B BENCH), programs (--command A --command B) or stored runs "
        "(--runs 1,2,3 --runs 4,5,6): interleaved randomized trials, a verdict per metric with change, "
        "confidence interval and p-value, and the error rates it keeps.",
    ),
    "export": LazyCommand(
        "kbench.cli.results_cmds:export_cmd",
        "Export a run with all its raw samples as JSON, CSV or Parquet.",
    ),
    "fleet": LazyCommand(
        "kbench.cli.fleet_cmd:fleet_group",
        "Run jobs on many test machines: Celery + Redis queues per machine class, runs in one PostgreSQL store "
        "(see docs/fleet.md).",
    ),
    "history": LazyCommand(
        "kbench.cli.history_cmd:history_cmd",
        "List the series of stored runs (benchmark + parameters + metric + machine + target), points newest "
        "last, with their change points (Apache Otava).",
    ),
    "job": LazyCommand(
        "kbench.cli.job_cmds:job_group",
        "Job files (YAML): check them and list their instances (see docs/jobs.md).",
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
        "The matrix of Mann-Whitney and Kolmogorov-Smirnov p-values for every pair of configurations, "
        "A/A pairs on the diagonal: which method separates a small difference, and which reports "
        "differences that are not there.",
    ),
    "serve": LazyCommand(
        "kbench.cli.serve_cmd:serve_cmd",
        "Serve a read-only web dashboard over the results database: every series with its change points, "
        "each run (histogram, CDF, context), two runs side by side, the regression report.",
    ),
    "show": LazyCommand(
        "kbench.cli.results_cmds:show_cmd", "Show a stored run: summary, histogram, CDF, context and warnings."
    ),
    "sysinfo": LazyCommand(
        "kbench.cli.sysinfo_cmd:sysinfo_cmd", "Show the machine inventory and a checklist of the noise sources."
    ),
    "trace": LazyCommand(
        "kbench.cli.trace_cmd:trace_cmd",
        "Time FUNCTION… in place (kretprobes) while a workload runs; store every call's cycles.",
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


def main() -> None:
    try:
        cli(prog_name="kbench")
    except KeyboardInterrupt:
        err_console.print("kbench: interrupted")
        sys.exit(exit_codes.INTERRUPTED)
