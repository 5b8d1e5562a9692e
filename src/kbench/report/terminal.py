"""Text renderings of one run: the seed-style summary line, a histogram and a CDF."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kbench.report.units import format_value
from kbench.stats.histogram import freedman_diaconis_bins, linear_histogram, log2_histogram
from kbench.stats.summary import Summary

BAR_WIDTH = 40
CDF_WIDTH = 60
CDF_LEVELS = 10
"""The CDF plot has a row per tenth, 1.0 at the top down to 0.0; F is drawn at its nearest tenth."""
BODY_QUANTILES = (0.005, 0.995)
"""Linear histograms and the CDF plot span this central range; the tails beyond it are
counted on their own lines, since one 4 µs interrupt would otherwise squash the body."""
MAX_TERMINAL_BINS = 20


def seed_line(summary: Summary, unit: str) -> str:
    """``min=… max=… count=… 95th=… 90th=… 50th=… mad=…`` with units."""
    def fmt(value: float) -> str:
        return format_value(value, unit)

    return (
        f"min={fmt(summary.min)} max={fmt(summary.max)} count={summary.n} "
        f"95th={fmt(summary.p95)} 90th={fmt(summary.p90)} 50th={fmt(summary.p50)} "
        f"mad={fmt(summary.mad)}"
    )


def histogram_lines(
    edges: Sequence[float] | np.ndarray, counts: Sequence[int] | np.ndarray, unit: str, total: int | None = None
) -> list[str]:
    """One line per bin: ``[lo, hi)  ████  count (share)``; empty edge bins trimmed. Shares are
    of ``total`` (every value, tails included), by default of the counts' sum."""
    counts_arr = np.asarray(counts)
    nonzero = np.flatnonzero(counts_arr)
    if nonzero.size == 0:
        return []
    first, last = int(nonzero[0]), int(nonzero[-1])
    total = int(counts_arr.sum()) if total is None else total
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


def body_histogram_lines(values: np.ndarray, unit: str) -> list[str]:
    """Linear bins over the central BODY_QUANTILES range, plus one line per tail.

    The bins are those of ``linear_histogram`` over the values inside that range (whole
    timer steps wide for quantized values); every value between the first and the last
    edge is counted in a bin, the others on the tail lines, so the lines add up to n.
    """
    lo, hi = (float(q) for q in np.quantile(values, BODY_QUANTILES))
    if hi <= lo:
        lo, hi = float(values.min()), float(values.max())
    inside = values[(values >= lo) & (values <= hi)]
    bins = min(freedman_diaconis_bins(inside), MAX_TERMINAL_BINS)
    edges = linear_histogram(inside, bins=bins).edges
    counts, _ = np.histogram(values, bins=edges)
    lines = histogram_lines(edges, counts, unit, total=values.size)
    first, last = float(edges[0]), float(edges[-1])
    below, above = int((values < first).sum()), int((values > last).sum())
    total = values.size
    if below:
        lines.insert(0, f"  below {format_value(first, unit)}: {below} ({100 * below / total:.1f}%)")
    if above:
        lines.append(
            f"  above {format_value(last, unit)}: {above} ({100 * above / total:.1f}%), "
            f"max {format_value(float(values.max()), unit)}"
        )
    return lines


def log2_histogram_lines(values: np.ndarray, unit: str) -> list[str]:
    histogram = log2_histogram(values)
    lines = histogram_lines(histogram.edges, histogram.counts, unit)
    if histogram.zeros:
        lines.insert(0, f"  zero: {histogram.zeros}")
    return lines


def cdf_lines(values: np.ndarray, unit: str) -> list[str]:
    """An ASCII plot of the empirical CDF over the central BODY_QUANTILES range.

    Column c is x = lo + c (hi - lo) / (CDF_WIDTH - 1); its dot is on the row labelled with
    F(x) = #{values <= x} / n rounded to the nearest tenth (halves up), so 90% of the
    values at or below x draw a dot on the 0.9 row.
    """
    if values.size == 0:
        return []
    ordered = np.sort(values)
    lo, hi = (float(q) for q in np.quantile(ordered, BODY_QUANTILES))
    if hi <= lo:
        return [f"  all samples ≈ {format_value(lo, unit)} (CDF is a step)"]
    xs = np.linspace(lo, hi, CDF_WIDTH)
    fractions = np.searchsorted(ordered, xs, side="right") / ordered.size
    levels = np.floor(fractions * CDF_LEVELS + 0.5).astype(int)
    lines = []
    for level in range(CDF_LEVELS, -1, -1):
        cells = "".join("•" if at == level else " " for at in levels)
        lines.append(f"  {level / CDF_LEVELS:4.1f} │{cells}")
    lines.append("       └" + "─" * CDF_WIDTH)
    left, right = format_value(lo, unit), format_value(hi, unit)
    lines.append("        " + left + " " * max(CDF_WIDTH - len(left) - len(right), 1) + right)
    lines.append(f"        (x spans p{100 * BODY_QUANTILES[0]:g}…p{100 * BODY_QUANTILES[1]:g})")
    return lines
