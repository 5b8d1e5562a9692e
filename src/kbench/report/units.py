"""Human-readable quantities: pick the unit that keeps 3–4 significant digits."""

from __future__ import annotations

import math

from kbench.contract.quantities import format_ns as format_ns
from kbench.contract.quantities import significant

NS_PER = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
"""Time units that are printed auto-scaled (pyperf and hyperfine store seconds)."""


def format_value(value: float, unit: str, *, digits: int = 4) -> str:
    """Format a value of ``unit``: times (``NS_PER``) auto-scale (``7.556e-07`` s → ``755.6ns``);
    other units are printed as they are."""
    if unit in NS_PER:
        return format_ns(value * NS_PER[unit], digits=digits)
    return f"{significant(value, digits)} {unit}".rstrip()


_SI_STEPS = ((1e12, 1e12, "T"), (1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k"))
"""(from, scale, prefix): a prefix from ten thousand on (``1234`` stays as it is)."""


def format_count(value: float, *, digits: int = 4) -> str:
    """A count or rate with an SI prefix from ten thousand on (``1575320000`` → ``1.575G``,
    ``48210`` → ``48.21k``); smaller ones as they are, to ``digits`` significant digits."""
    if not math.isfinite(value):
        return "n/a"
    for start, scale, prefix in _SI_STEPS:
        if abs(value) >= start:
            return f"{significant(value / scale, digits)}{prefix}"
    return significant(value, digits) if value != int(value) or abs(value) < 1000 else f"{value:.0f}"


def format_measure(value: float, unit: str, *, digits: int = 4) -> str:
    """The one formatter of a measured value for tables: times scaled to ns/µs/ms/s with their unit
    (``218892500`` ns → ``218.9ms``), anything else a count with an SI prefix (its unit said
    beside the metric's name, ``metric_name``); ``n/a`` when undefined."""
    if not math.isfinite(value):
        return "n/a"
    if unit in NS_PER:
        return format_ns(value * NS_PER[unit], digits=digits)
    return format_count(value, digits=digits)


def metric_name(metric: str, unit: str) -> str:
    """A table row's name: the metric, with its unit when the values do not carry it (not a time)."""
    return metric if unit in NS_PER or not unit else f"{metric} ({unit})"
