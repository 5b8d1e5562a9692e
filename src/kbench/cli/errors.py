"""How every command ends on an error: one line (``kbench: error: …``) and a documented exit code.

``user_errors()`` is the one mapper from library exceptions to exit codes (docs/exit-codes.md).
Its table is in the order it is consulted. Classes of rooms that a quick command never imports
(history, jobs, fleet) are named by module and class and looked up in ``sys.modules`` when an
exception arrives: an exception of a class can only have been raised once its module was
imported, so the mapper itself imports nothing heavy (``kbench fleet status`` stays free of
Celery, ``results`` of the job reader).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NoReturn, Protocol, runtime_checkable

import click
from rich.text import Text

from kbench.cli import exit_codes
from kbench.cli.console import echo_literal, err_console
from kbench.contract.benchmark import BadParameter, UnknownBenchmark
from kbench.contract.request import BadRequest
from kbench.extras import ExtraMissing
from kbench.native import NativeToolMissing
from kbench.store.errors import RunNotFound, StoreError, database_error_message
from kbench.targets.base import ExecutionFailed, TargetError


def fail(message: str, code: int) -> NoReturn:
    """Print ``kbench: error: MESSAGE`` on stderr and exit with ``code``.

    The message is printed literally, control characters escaped (``SafeConsole``): it
    often carries outside text (a compiler's output, a tool's error, the guest console,
    a path) that must not be read as markup or reach the terminal as escapes.
    """
    err_console.print(Text.assemble(("kbench: error:", "bold red"), " ", message), highlight=False)
    sys.exit(code)


@dataclass(frozen=True)
class ErrorExit:
    """Exceptions of ``module.name`` (and its subclasses) end the command with ``code``,
    their message after ``prefix``."""

    module: str
    name: str
    code: int
    prefix: str = ""

    def matches(self, exc: BaseException) -> bool:
        found = getattr(sys.modules.get(self.module), self.name, None)
        return isinstance(found, type) and isinstance(exc, found)


ERROR_EXITS: tuple[ErrorExit, ...] = (
    ErrorExit("kbench.history.load", "NoSuchSeries", exit_codes.NOT_FOUND),
    ErrorExit("kbench.history.changes", "HistoryUnavailable", exit_codes.USAGE),
    ErrorExit("kbench.fleet.settings", "SettingsError", exit_codes.USAGE),
    ErrorExit("kbench.fleet.plan", "PlanError", exit_codes.USAGE),
    ErrorExit("kbench.store.fleet", "MachineNameTaken", exit_codes.USAGE),
    ErrorExit("kbench.fleet.services", "ServiceUnavailable", exit_codes.USAGE),
    ErrorExit("kbench.fleet.demo", "DemoFailed", exit_codes.USAGE),
    ErrorExit("kbench.fleet.app", "BrokerUnreachable", exit_codes.BROKER_FAILED, "the fleet's broker is unreachable: "),
    ErrorExit("kbench.kernels.errors", "KernelBuildError", exit_codes.KERNEL_BUILD_FAILED),
    ErrorExit("kbench.kernels.errors", "KernelError", exit_codes.USAGE),
    ErrorExit("kbench.workspaces", "WorkspaceBusy", exit_codes.USAGE),
)
"""The errors of rooms imported late, after those every command may meet (see ``user_errors``)."""
JOB_ERROR = ErrorExit("kbench.jobs.problems", "JobError", exit_codes.USAGE)
"""An invalid job file: its problems are printed one per line before the exit (``fail_on_job_problems``)."""


@contextmanager
def user_errors() -> Iterator[None]:
    """Map library exceptions to one clear line and a documented exit code, in this order:
    a bad benchmark, parameter or request (2); a missing extra (16); a run not found (4); the store (5);
    a measured execution that failed (12); the target or a native tool (3); a database driver's error (5,
    ``database_error_message``); an invalid job file (2, every problem listed); then ``ERROR_EXITS``.
    Anything else is a bug and is raised."""
    try:
        yield
    except (UnknownBenchmark, BadParameter, BadRequest) as exc:
        fail(str(exc), exit_codes.USAGE)
    except ExtraMissing as exc:
        fail(str(exc), exit_codes.EXTRA_MISSING)
    except RunNotFound as exc:
        fail(str(exc), exit_codes.NOT_FOUND)
    except StoreError as exc:  # SamplesNotStored too: its message names the recovery file
        fail(str(exc), exit_codes.STORE_FAILED)
    except ExecutionFailed as exc:
        fail(str(exc), exit_codes.EXECUTION_FAILED)
    except (TargetError, NativeToolMissing) as exc:
        fail(str(exc), exit_codes.MEASUREMENT_FAILED)
    except Exception as exc:
        message = database_error_message(exc, _database_in_use())
        if message is not None:
            fail(message, exit_codes.STORE_FAILED)
        if JOB_ERROR.matches(exc):
            fail_on_job_problems(exc.problems)  # type: ignore[attr-defined]
        for entry in ERROR_EXITS:
            if entry.matches(exc):
                fail(entry.prefix + str(exc), entry.code)
        raise


def fail_on_job_problems(problems: Sequence[object]) -> NoReturn:
    """Every problem of an invalid job file, one per line on stderr, then exit 2."""
    for problem in problems:
        echo_literal(problem, err=True)  # job files are outside text
    count = len(problems)
    fail(f"invalid job file: {count} problem{'s' if count != 1 else ''}; nothing was run", exit_codes.USAGE)


@runtime_checkable
class OpensDatabase(Protocol):
    """The command's context object (``kbench.cli.main.Context``): it knows the database it opened."""

    def database_in_use(self) -> str: ...


def _database_in_use() -> str:
    """The database this command opened, to name it in an error ('' if none)."""
    click_context = click.get_current_context(silent=True)
    while click_context is not None:
        if isinstance(click_context.obj, OpensDatabase):
            return click_context.obj.database_in_use()
        click_context = click_context.parent
    return ""
