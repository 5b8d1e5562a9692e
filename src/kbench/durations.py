"""Durations as people write them (``10``, ``2.5``, ``10s``, ``500ms``, ``1.5m``, ``1h``, ``30d``),
whole numbers, and warm-ups (a sample count or a duration): what the command line and job
files both read."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?$")
_INTEGER = re.compile(r"^\+?\d+$")
MAX_DIGITS = 20
"""More digits than any limit has (the largest, 10¹¹ calls, has 12): a longer number is
refused as such, before Python's own limit on converting text (4,300 digits) is reached."""
_SCALE = {"ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def match_duration(text: str) -> tuple[float, str | None] | None:
    """(seconds, unit as written or None) when ``text`` is a duration, else None.

    Leading and trailing blanks are ignored; a bare number means seconds.
    """
    match = _DURATION.match(text.strip())
    if match is None:
        return None
    seconds = float(match.group(1)) * _SCALE[match.group(2)]
    if not math.isfinite(seconds):  # 400 digits or more: no duration
        return None
    return seconds, match.group(2)


def parse_duration(text: str) -> float:
    """Seconds (> 0) from a duration; ValueError naming the input otherwise."""
    matched = match_duration(text)
    if matched is None:
        raise ValueError(f"{text!r} is not a duration (examples: 10, 2s, 500ms, 1.5m)")
    if matched[0] <= 0:
        raise ValueError(f"duration must be positive, got {text!r}")
    return matched[0]


def whole(text: str) -> int | None:
    """The whole number ``text`` writes in decimal (``+`` allowed), or None if it is not
    one; ValueError for more than MAX_DIGITS digits."""
    text = text.strip()
    if not _INTEGER.match(text):
        return None
    digits = text.lstrip("+").lstrip("0")
    if len(digits) > MAX_DIGITS:
        raise ValueError(f"must be a number of at most {MAX_DIGITS} digits, got one of {len(digits):,} digits")
    return int(text)


@dataclass(frozen=True)
class Warmup:
    """A warm-up as a sample count or as a duration in seconds (exactly one is set)."""

    samples: int | None = None
    duration_s: float | None = None


class NotAWarmup(ValueError):
    """The text is neither a sample count nor a duration with a unit."""


class ZeroWarmupDuration(NotAWarmup):
    """A duration with a unit that is not positive (``0s``)."""


def parse_warmup(text: str) -> Warmup:
    """A warm-up from ``1000`` (a count >= 0, see ``whole``) or a duration with a unit
    (``0.5s``, ``200ms``; > 0). A bare ``0.5`` is ambiguous and refused: NotAWarmup
    (ZeroWarmupDuration for ``0s``); ValueError for a count of more than MAX_DIGITS digits."""
    count = whole(text)
    if count is not None:
        return Warmup(samples=count)
    matched = match_duration(text)
    if matched is None or matched[1] is None:
        raise NotAWarmup(text)
    if matched[0] <= 0:
        raise ZeroWarmupDuration(text)
    return Warmup(duration_s=matched[0])
