"""Options shared by ``kbench history`` and ``kbench report``: selection, detection settings, errors."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class Since(click.ParamType):  # type: ignore[type-arg]
    name = "DATE|AGE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        if isinstance(value, datetime):
            return value
        from kbench.history.since import parse_since

        try:
            return parse_since(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def detection_options(func: F) -> F:
    """--window, --max-pvalue and --values (how change points are found)."""
    func = click.option(
        "--values", "raw_values", is_flag=True,
        help="Test the values as they are (by default outliers beyond 3 robust SDs are clipped first).",
    )(func)
    func = click.option(
        "--max-pvalue", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.001,
        show_default=True, help="A change point must pass its significance test at this level.",
    )(func)
    func = click.option(
        "--window", type=click.IntRange(min=4), default=50, show_default=True,
        help="Points per sliding window of the detection's split step.",
    )(func)
    return func


def evidence_option(func: F) -> F:
    """--all: a conclusion's evidence too (a bisection's trials, a watch's side-by-side comparisons)."""
    return click.option(
        "--all", "evidence", is_flag=True,
        help="Also the runs that are a conclusion's evidence (a bisection's trials, a watch's side-by-side "
        "comparisons): each is a series of its own, left out by default.",
    )(func)


def settings_from(window: int, max_pvalue: float, raw_values: bool) -> Any:
    from kbench.history.changes import DetectionSettings

    return DetectionSettings(window=window, max_pvalue=max_pvalue, winsorize=None if raw_values else 3.0)

