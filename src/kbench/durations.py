"""Durations as people write them: ``10``, ``2.5``, ``10s``, ``500ms``, ``1.5m``, ``1h``, ``30d``."""

from __future__ import annotations

import math
import re

_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?$")
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
