"""Human-readable quantities: pick the unit that keeps 3–4 significant digits."""

from __future__ import annotations

import math

_TIME_STEPS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def format_ns(value: float, *, digits: int = 4) -> str:
    """``1234.5`` → ``1.234µs``; values below 1 ns keep the ns unit."""
    if not math.isfinite(value):
        return str(value)
    for scale, unit in _TIME_STEPS:
        if abs(value) >= scale:
            return f"{_sig(value / scale, digits)}{unit}"
    return f"{_sig(value, digits)}ns"


NS_PER = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
"""Time units that are printed auto-scaled (pyperf and hyperfine store seconds)."""


def format_value(value: float, unit: str, *, digits: int = 4) -> str:
    """Format a value of ``unit``: times (``NS_PER``) auto-scale (``7.556e-07`` s → ``755.6ns``);
    other units are printed as they are."""
    if unit in NS_PER:
        return format_ns(value * NS_PER[unit], digits=digits)
    return f"{_sig(value, digits)} {unit}".rstrip()


def _sig(value: float, digits: int) -> str:
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{value:.{decimals}f}"
