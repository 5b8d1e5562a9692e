"""``--metric``: what a comparison judges, time or instruction counts or both (docs/instructions.md)."""

from __future__ import annotations

from typing import Any

import click

INSTRUCTIONS = "instructions"
TIME_METRICS = ("cpu", "wall")
METRIC_HELP = ("Commands: judge CPU time (user+system of the child) or wall time, both reported; instructions: "
               "count instructions instead of timing (commands, syscall.*, kfunc.*: the PMU, else valgrind; in a "
               "--kernel guest kbench's TCG plugin); instructions,cpu: both, each with its verdict.")


class MetricChoice(click.ParamType):  # type: ignore[type-arg]
    """``cpu``, ``wall``, ``instructions``, or ``instructions`` with one of the times (``instructions,cpu``)."""

    name = "cpu|wall|instructions[,cpu|wall]"

    def __init__(self, times: tuple[str, ...] = TIME_METRICS):
        self.times = times

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        words = [word.strip() for word in str(value).split(",")]
        allowed = (*self.times, INSTRUCTIONS)
        unknown = [word for word in words if word not in allowed]
        if unknown or not words or len(set(words)) != len(words):
            self.fail(f"{value!r}: give one of {', '.join(allowed)}, or instructions and one time joined by a comma "
                      "(instructions,cpu)", param, ctx)
        times = [word for word in words if word != INSTRUCTIONS]
        if len(times) > 1:
            self.fail(f"{value!r}: one time at most (cpu or wall) beside instructions", param, ctx)
        return ",".join(words)


def split_metric(metric: str) -> tuple[bool, str | None]:
    """(instructions asked, the time metric asked or None): ``instructions,cpu`` → (True, "cpu")."""
    words = metric.split(",")
    times = [word for word in words if word != INSTRUCTIONS]
    return INSTRUCTIONS in words, times[0] if times else None
