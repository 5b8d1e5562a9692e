"""Single job-file values: what each kind of value accepts, and the message when it does not.

Every converter takes a ``Scalar`` (text as written, YAML type, line) and returns the
typed value or raises ``ValueError`` whose text is the problem message (without the key).
Numbers are read from the text as written, so ``010`` is ten, not YAML 1.1's octal eight.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from kbench.contract.suggest import did_you_mean
from kbench.durations import NotAWarmup, Warmup, ZeroWarmupDuration, match_duration, parse_warmup, whole
from kbench.jobs.yaml_tree import Scalar

T = TypeVar("T")
Converter = Callable[[Scalar], T]

MODES = ("process", "thread")
GOVERNORS = ("performance", "powersave", "ondemand", "conservative", "schedutil", "userspace")

_PERCENT = re.compile(r"^(\d+)\s*%$")
_DEB_RELEASE = re.compile(r"^deb:[0-9][A-Za-z0-9.+~_-]*$")
_TREE = re.compile(r"^tree:[^@\s][^\s]*$")
JOB_CUTOFF = 0.6
"""Closeness of a suggestion for a job file's key or value (closer than the command line's)."""


@dataclass(frozen=True)
class NrTask:
    """``nr_task`` as written: a task count, or a percentage of the CPUs."""

    count: int | None = None
    percent: int | None = None

    @property
    def spec(self) -> str:
        """The canonical text: ``"4"`` or ``"50%"``."""
        return f"{self.percent}%" if self.percent is not None else str(self.count)

    def resolve(self, cpu_count: int) -> int:
        """The task count: the count itself, or ``max(1, cpu_count * percent // 100)``
        (rounded down, at least one task)."""
        if self.count is not None:
            return self.count
        assert self.percent is not None
        return max(1, cpu_count * self.percent // 100)


def any_text(value: Scalar) -> str:
    """Any value, as the text written in the file (benchmark parameters)."""
    return value.text


def name(value: Scalar) -> str:
    """A non-empty name (benchmark, test, tag)."""
    if not value.text.strip():
        raise ValueError("must be a name, got an empty string")
    return value.text.strip()


def positive_int(value: Scalar) -> int:
    """A whole number >= 1, written in decimal."""
    number = whole(value.text) if value.type in ("str", "int") else None
    if number is not None and number >= 1:
        return number
    raise ValueError(f"must be an integer >= 1, got {value.shown}")


def iterations(value: Scalar) -> int:
    """Trials: a whole number >= 1, or LKP's ``3x``."""
    text = value.text.strip()
    number = whole(text[:-1]) if value.type == "str" and text.endswith("x") else None
    if number is not None and number >= 1:
        return number
    return positive_int(value)


def duration(value: Scalar) -> float:
    """Seconds from ``10``, ``2.5``, ``10s``, ``500ms``, ``1.5m`` or ``1h``; must be > 0."""
    text = value.text.strip()
    match = match_duration(text) if value.type in ("str", "int", "float") else None
    if match is None:
        if value.type in ("str", "int", "float") and text.startswith("-"):
            raise ValueError(f"must be positive, got {value.shown}")
        raise ValueError(f"must be a duration such as 10, 10s, 500ms or 1.5m, got {value.shown}")
    seconds = match[0]
    if seconds <= 0:
        raise ValueError(f"must be positive, got {value.shown}")
    return seconds


def nr_task(value: Scalar) -> NrTask:
    """A task count >= 1 (``4``, LKP's ``4t``) or a percentage > 0 of the CPUs (``50%``, ``200%``)."""
    text = value.text.strip()
    percent = _PERCENT.match(text) if value.type == "str" else None
    if percent is not None:
        share = whole(percent.group(1))
        if share == 0:
            raise ValueError(f"0% of the CPUs is no task at all; give a percentage above 0, got {value.shown}")
        return NrTask(percent=share)
    if value.type == "str" and text.endswith("t"):  # LKP's fsmark jobs write 1t, 64t: that many tasks
        text = text[:-1]
    count = whole(text) if value.type in ("str", "int") else None
    if count is not None:
        if count == 0:
            raise ValueError("must be at least 1 task, got 0")
        return NrTask(count=count)
    raise ValueError(f"must be a task count (4) or a percentage of the CPUs (50%), got {value.shown}")


METRICS = ("time", "instructions")
"""A job's ``metric:``: timed (the default) or counted in instructions (docs/instructions.md)."""


def choice(options: Sequence[str]) -> Converter[str]:
    """One of ``options``, spelled exactly."""

    def convert(value: Scalar) -> str:
        if value.text in options:
            return value.text
        hint = did_you_mean(value.text, options, cutoff=JOB_CUTOFF)
        raise ValueError(f"{value.shown} is not one of {', '.join(options)}{hint}")

    return convert


def mode(value: Scalar) -> str:
    """``process`` or ``thread`` (LKP's ``threads`` too)."""
    if value.text == "threads":
        return "thread"
    return choice(MODES)(value)


def cpu_number(cpu_count: int) -> Converter[int]:
    """A CPU number from 0 to ``cpu_count - 1``."""

    def convert(value: Scalar) -> int:
        number = whole(value.text) if value.type in ("str", "int") else None
        if number is None:
            raise ValueError(f"must be a CPU number (0, 1, ...), got {value.shown}")
        if number >= cpu_count:
            raise ValueError(f"there is no CPU {number} among {cpu_count} CPUs (0-{cpu_count - 1})")
        return number

    return convert


def warmup(value: Scalar) -> Warmup:
    """A count >= 0 (``1000``) or a duration with a unit (``0.5s``, ``200ms``; ``parse_warmup``);
    a bare ``0.5`` is ambiguous and refused."""
    try:
        return parse_warmup(value.text)
    except ZeroWarmupDuration:
        raise ValueError(f"must be positive, got {value.shown}") from None
    except NotAWarmup:
        raise ValueError(f"must be a sample count (1000) or a duration with a unit (0.5s), got {value.shown}") from None


def batch(value: Scalar) -> int | None:
    """Operations per sample: an integer >= 1, or ``auto`` (None: calibrated by the probe)."""
    if value.text == "auto":
        return None
    try:
        return positive_int(value)
    except ValueError:
        raise ValueError(f"must be an integer >= 1 or auto, got {value.shown}") from None


def boolean(value: Scalar) -> bool:
    """A YAML boolean: true/false (also yes/no, on/off)."""
    if value.type == "bool":
        return value.text.lower() in ("true", "yes", "on", "y")
    raise ValueError(f"must be true or false, got {value.shown}")


def target(value: Scalar) -> str:
    """Where to run: ``local``, ``deb:RELEASE`` (a Debian kernel package, booted in a VM),
    ``tree:PATH[@REV]`` (a kernel source tree kbench builds) or a path to a kernel image
    (anything containing ``/``), kept as written."""
    text = value.text.strip()
    if value.type == "str" and (text == "local" or _DEB_RELEASE.match(text) or _TREE.match(text) or "/" in text):
        return text
    raise ValueError(
        f"{value.shown} is not a target: give local, deb:RELEASE (e.g. deb:6.1.0-56-amd64), "
        "tree:PATH[@REV] (a kernel source tree, e.g. tree:linux@HEAD) or a path to a kernel image"
    )
