"""Click parameter types for kbench's command line."""

from __future__ import annotations

import re
from typing import Any

import click

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m)?\s*$")
_SCALE = {"ms": 1e-3, "s": 1.0, "m": 60.0, None: 1.0}


def parse_duration(text: str) -> float:
    """``"2"``, ``"2s"``, ``"500ms"``, ``"1.5m"`` → seconds; ValueError otherwise."""
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a duration (examples: 2s, 500ms, 1.5m)")
    seconds = float(match.group(1)) * _SCALE[match.group(2)]
    if seconds <= 0:
        raise ValueError(f"duration must be positive, got {text!r}")
    return seconds


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
    ) -> tuple[str, float]:
        if isinstance(value, tuple):
            return value
        text = str(value).strip()
        if text.isdigit():
            return ("samples", float(int(text)))
        try:
            return ("duration", parse_duration(text))
        except ValueError:
            self.fail(f"{text!r} is neither a sample count nor a duration (e.g. 1000, 2s)", param, ctx)


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
