"""Times in the unit that keeps 3–4 significant digits (the one formatter of a time in ns;
``kbench.report.units`` builds the other quantities' formatters on it)."""

from __future__ import annotations

import math

_TIME_STEPS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def format_ns(value: float, *, digits: int = 4) -> str:
    """``1234.5`` → ``1.234µs``; values below 1 ns keep the ns unit."""
    if not math.isfinite(value):
        return str(value)
    for scale, unit in _TIME_STEPS:
        if abs(value) >= scale:
            return f"{significant(value / scale, digits)}{unit}"
    return f"{significant(value, digits)}ns"


def significant(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits (no exponent; integers keep all theirs)."""
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{value:.{decimals}f}"
