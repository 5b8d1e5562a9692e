"""A Click group whose commands are imported only when one of them runs.

``kbench --help`` and the quick commands must not pay for the imports of the heavy
ones (scipy, matplotlib, SQLAlchemy): the group knows each command by the module that
defines it and its one-line help, and imports that module when the command is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
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
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As Click's, with "did you mean" among every command, not only those already imported."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand:
            raise click.exceptions.NoSuchCommand(
                str(args[0]), possibilities=self.list_commands(ctx), ctx=ctx
            ) from None

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
