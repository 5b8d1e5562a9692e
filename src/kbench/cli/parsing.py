"""Click parameter types for kbench's command line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
import click.shell_completion

from kbench.durations import NotAWarmup, parse_duration, parse_warmup
from kbench.durations import Warmup as ParsedWarmup

if TYPE_CHECKING:
    from kbench.engine.run_selection import RunSelector


def complete_benchmarks(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[click.shell_completion.CompletionItem]:
    """Shell completion of a benchmark argument: every catalog name starting with what was typed;
    a path (``./``, ``/``, ``~``: a job file for ``kbench run``) is left to the shell's file completion."""
    from click.shell_completion import CompletionItem

    from kbench.catalog.benchmarks import all_benchmarks

    if incomplete.startswith((".", "/", "~")):
        return [CompletionItem(incomplete, type="file")]

    try:
        names = sorted(all_benchmarks())
    except Exception:  # a completion never fails loudly (no probe built yet, ...)
        return []
    return [CompletionItem(name) for name in names if name.startswith(incomplete)]


class Duration(click.ParamType):  # type: ignore[type-arg]
    name = "DURATION"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_duration(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Warmup(click.ParamType):  # type: ignore[type-arg]
    """A warm-up given as a count (``500``) or a duration (``0.5s``, ``200ms``)."""

    name = "N|DURATION"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> ParsedWarmup:
        if isinstance(value, ParsedWarmup):
            return value
        text = str(value).strip()
        try:
            return parse_warmup(text)
        except NotAWarmup:
            self.fail(f"{text!r} is neither a sample count nor a duration with a unit (e.g. 1000, 2s)", param, ctx)
        except ValueError as exc:  # more digits than any limit
            self.fail(f"{text!r}: {exc}", param, ctx)


class KeyValue(click.ParamType):  # type: ignore[type-arg]
    name = "KEY=VALUE"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        key, sep, val = str(value).partition("=")
        if not sep or not key.strip():
            self.fail(f"{value!r} is not KEY=VALUE", param, ctx)
        return key.strip(), val


class Runs(click.ParamType):  # type: ignore[type-arg]
    """Stored runs: ``1,2,3``, ``tag:NAME`` or ``kernel:RELEASE`` (``kbench.engine.run_selection``)."""

    name = "SELECTOR"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> RunSelector:
        from kbench.engine.run_selection import RunSelector, parse_selector

        if isinstance(value, RunSelector):
            return value
        try:
            return parse_selector(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
