"""A Click group whose commands are imported only when one of them runs.

``kbench --help`` and the quick commands must not pay for the imports of the heavy
ones (scipy, matplotlib, SQLAlchemy): the group knows each command by the module that
defines it and its one-line help, and imports that module when the command is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import click


@dataclass(frozen=True)
class LazyCommand:
    """Where a command lives (``package.module:attribute``) and its one-line help."""

    target: str
    help: str

    def short_help(self, limit: int) -> str:
        """The line ``--help`` shows, shortened exactly as Click shortens a command's own help."""
        return click.Command(None, help=self.help).get_short_help_str(limit)

    def load(self) -> click.Command:
        module_name, _, attribute = self.target.partition(":")
        command = getattr(importlib.import_module(module_name), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{self.target} is not a Click command")
        return command


class LazyGroup(click.Group):
    """A group listing ``lazy`` commands without importing them."""

    def __init__(self, *args: Any, lazy: Mapping[str, LazyCommand] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, LazyCommand] = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self.lazy[cmd_name].load(), cmd_name)
        command = super().get_command(ctx, cmd_name)
        if command is not None:  # its --help ends with its examples (kbench.cli.examples)
            from kbench.cli.examples import attach

            attach(command, " ".join([*_names(ctx), cmd_name]))
        return command

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As Click's, with "did you mean" among every command, not only those already imported."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand:
            from kbench.contract.suggest import close_matches

            name = str(args[0])
            unknown = click.exceptions.NoSuchCommand(name, ctx=ctx)
            raise suggesting(unknown, close_matches(name, self.list_commands(ctx))) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        with one_voice():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with one_voice():
            return super().invoke(ctx)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As Click's own listing, but the help of a command not yet imported comes from ``lazy``."""
        names = [name for name in self.list_commands(ctx) if not self._hidden(name)]
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.commands:
                text = self.commands[name].get_short_help_str(limit)
            else:
                text = self.lazy[name].short_help(limit)
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def _hidden(self, name: str) -> bool:
        command = self.commands.get(name)
        return command is not None and command.hidden


def _names(ctx: click.Context) -> list[str]:
    """The command names of ``ctx`` below the root: ["bisect"] in ``kbench bisect``'s context."""
    names = []
    while ctx.parent is not None:
        names.append(ctx.info_name or "")
        ctx = ctx.parent
    return names[::-1]


def suggesting(error: click.UsageError, close: list[str] | None) -> click.UsageError:
    """``error`` (Click's unknown option or command) with kbench's one "did you mean" wording
    (``kbench.contract.suggest.hint``: `` (did you mean --samples or --warmup?)``) instead
    of Click's two ("Did you mean 'show'?", "(Did you mean one of: ...?)")."""
    if not close:
        return error
    from kbench.contract.suggest import hint

    if isinstance(error, click.exceptions.NoSuchOption):
        name = error.option_name
        return click.exceptions.NoSuchOption(name, f"No such option {name!r}{hint(close)}", ctx=error.ctx)
    if isinstance(error, click.exceptions.NoSuchCommand):
        name = error.command_name
        return click.exceptions.NoSuchCommand(name, f"No such command {name!r}{hint(close)}", ctx=error.ctx)
    return error


@contextmanager
def one_voice() -> Iterator[None]:
    """Click's unknown option or command errors raised inside, with kbench's "did you mean" (``suggesting``):
    every command and subcommand is parsed and invoked inside the root group's ``invoke``."""
    try:
        yield
    except (click.exceptions.NoSuchOption, click.exceptions.NoSuchCommand) as error:
        raised = suggesting(error, error.possibilities)
        if raised is error:
            raise
        raise raised from None
