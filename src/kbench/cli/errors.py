"""How every command ends on an error: one line (``kbench: error: …``) and a documented exit code.

``user_errors()`` is the one mapper from library exceptions to exit codes (docs/exit-codes.md).
An error a user can meet is a ``kbench.exit_codes.KbenchError``, whose class carries its exit
code (whatever room raised it); a database driver's own error is named by
``database_error_message``. Anything else is a bug and is raised as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn, Protocol, runtime_checkable

import click
from rich.text import Text

from kbench import exit_codes
from kbench.cli.console import echo_literal, err_console
from kbench.exit_codes import KbenchError
from kbench.store.errors import database_error_message


def fail(message: str, code: int) -> NoReturn:
    """Print ``kbench: error: MESSAGE`` on stderr and exit with ``code``.

    The message is printed literally, control characters escaped (``SafeConsole``): it
    often carries outside text (a compiler's output, a tool's error, the guest console,
    a path) that must not be read as markup or reach the terminal as escapes.
    """
    err_console.print(Text.assemble(("kbench: error:", "bold red"), " ", message), highlight=False)
    sys.exit(code)


def fail_with(error: KbenchError) -> NoReturn:
    """End the command on ``error``: its detail lines (outside text, printed literally), its line, its code."""
    for line in error.detail_lines():
        echo_literal(line, err=True)
    fail(error.message(), error.exit_code)


@contextmanager
def user_errors() -> Iterator[None]:
    """Map library exceptions to one clear line and a documented exit code: a ``KbenchError``
    ends with its class's code; a database driver's error with 5 (``database_error_message``).
    Anything else is a bug and is raised."""
    try:
        yield
    except KbenchError as exc:
        fail_with(exc)
    except Exception as exc:
        message = database_error_message(exc, _database_in_use())
        if message is not None:
            fail(message, exit_codes.STORE_FAILED)
        raise


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
