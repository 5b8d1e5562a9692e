"""Text renderings of one run: the seed-style summary line, a histogram and a CDF."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kbench.report.units import format_value
from kbench.stats.summary import Summary

BAR_WIDTH = 40
CDF_WIDTH = 60
CDF_HEIGHT = 10


def seed_line(summary: Summary, unit: str) -> str:
    """``min=… max=… count=… 95th=… 90th=… 50th=… mad=…`` with units."""
    def fmt(value: float) -> str:
        return format_value(value, unit)

    return (
        f"min={fmt(summary.min)} max={fmt(summary.max)} count={summary.n} "
        f"95th={fmt(summary.p95)} 90th={fmt(summary.p90)} 50th={fmt(summary.p50)} "
        f"mad={fmt(summary.mad)}"
    )


def histogram_lines(edges: Sequence[float] | np.ndarray, counts: Sequence[int] | np.ndarray, unit: str) -> list[str]:
    """One line per bin: ``[lo, hi)  ████  count (share)``; empty edge bins trimmed."""
    counts_arr = np.asarray(counts)
    nonzero = np.flatnonzero(counts_arr)
    if nonzero.size == 0:
        return []
    first, last = int(nonzero[0]), int(nonzero[-1])
    total = int(counts_arr.sum())
    peak = int(counts_arr.max())
    labels = [
        f"[{format_value(edges[i], unit)}, {format_value(edges[i + 1], unit)})"
        for i in range(first, last + 1)
    ]
    width = max(len(label) for label in labels)
    lines = []
    for label, count in zip(labels, counts_arr[first : last + 1], strict=True):
        bar = "█" * round(BAR_WIDTH * int(count) / peak) if peak else ""
        if count and not bar:
            bar = "▏"
        lines.append(f"  {label:>{width}} {bar:<{BAR_WIDTH}} {int(count)} ({100 * count / total:.1f}%)")
    return lines


def cdf_lines(values: np.ndarray, unit: str) -> list[str]:
    """An ASCII plot of the empirical CDF, x from p0.1 to p99.9 (tails would squash it)."""
    if values.size == 0:
        return []
    ordered = np.sort(values)
    lo = float(np.quantile(ordered, 0.001))
    hi = float(np.quantile(ordered, 0.999))
    if hi <= lo:
        return [f"  all samples ≈ {format_value(lo, unit)} (CDF is a step)"]
    xs = np.linspace(lo, hi, CDF_WIDTH)
    fractions = np.searchsorted(ordered, xs, side="right") / ordered.size
    grid = [[" "] * CDF_WIDTH for _ in range(CDF_HEIGHT)]
    for col, fraction in enumerate(fractions):
        row = min(int(fraction * CDF_HEIGHT), CDF_HEIGHT - 1)
        grid[CDF_HEIGHT - 1 - row][col] = "•"
    lines = []
    for i, row_cells in enumerate(grid):
        level = (CDF_HEIGHT - i) / CDF_HEIGHT
        lines.append(f"  {level:4.1f} │{''.join(row_cells)}")
    lines.append("       └" + "─" * CDF_WIDTH)
    left, right = format_value(lo, unit), format_value(hi, unit)
    lines.append("        " + left + " " * max(CDF_WIDTH - len(left) - len(right), 1) + right)
    return lines
