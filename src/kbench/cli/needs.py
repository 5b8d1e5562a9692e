"""Options and command groups that need an optional part of kbench (an extra), checked while
the command line is parsed: before anything is measured, built or opened.

``kbench.extras.require`` does the check; its ``ExtraMissing`` ends the command with one line
naming the pip command and exit 16 (``kbench.cli.main``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kbench.extras import require


def needs_extra(
    extra: str, what: str, when: Callable[[Any], bool] = lambda value: value is not None and value is not False,
    hint: str = "",
) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An option callback: an option given (``when`` its value) needs ``extra``."""

    def check(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if not ctx.resilient_parsing and when(value):
            require(extra, what, hint)
        return value

    return check


class GroupNeedingExtra(click.Group):
    """A group every subcommand of which needs ``extra``: checked once the group's own options
    are parsed, unless the command line asks for help (help is always there)."""

    def __init__(self, *args: Any, extra: str, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.extra = extra

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        asks_help = bool(set(args) & set(ctx.help_option_names))
        rest = super().parse_args(ctx, args)
        if not ctx.resilient_parsing and not asks_help:
            require(self.extra, f"kbench {self.name}")
        return rest
