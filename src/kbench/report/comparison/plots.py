"""Comparison plots as inline SVG text (matplotlib, no pyplot state, no fonts needed by the reader).

Every function returns one ``<svg>`` element ready to paste into HTML: no XML prolog, text
drawn as paths (``svg.fonttype = path``, so the page needs no font), ids prefixed per plot
so that several plots in one document never share an id, deterministic output
(``svg.hashsalt`` fixed, no date metadata). Functions return None when there is nothing
to draw (no samples, no series).
"""

from __future__ import annotations

import io
import itertools
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from numpy.typing import NDArray

from kbench.report.comparison.common import format_change, p_text, verdict_slug
from kbench.report.comparison.model import ComparisonReport, MetricComparison, SideData, TrialSeries
from kbench.stats.histogram import freedman_diaconis_bins
from kbench.stats.percentiles import quantiles

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

BASE_COLOR = "#3b6ea8"
NEW_COLOR = "#e07a1f"
VERDICT_COLORS = {
    "regression": "#c62828",
    "improvement": "#2e7d32",
    "no-change": "#6b7280",
}
OTHER_VERDICT_COLOR = "#b7791f"
GRID_COLOR = "#e5e7eb"
TEXT_COLOR = "#1f2937"
WARMUP_COLOR = "#fbbf24"

VIEW_QUANTILES = (0.005, 0.995)  # the x range of histograms/CDFs and the y range of series
MAX_HISTOGRAM_BINS = 60
CDF_POINTS = 400
SERIES_POINTS_PER_TRIAL = 200

_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "path",
    "svg.hashsalt": "kbench",
    "font.family": "DejaVu Sans",
    "font.size": 8.5,
    "axes.edgecolor": "#9ca3af",
    "axes.labelcolor": TEXT_COLOR,
    "axes.titlesize": 9,
    "axes.titleweight": "bold",
    "axes.titlecolor": TEXT_COLOR,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID_COLOR,
    "grid.linewidth": 0.6,
    "xtick.color": "#4b5563",
    "ytick.color": "#4b5563",
    "legend.frameon": False,
    "legend.fontsize": 8,
    "lines.linewidth": 1.3,
}
_ids = itertools.count()


def verdict_color(verdict: str) -> str:
    return VERDICT_COLORS.get(verdict_slug(verdict), OTHER_VERDICT_COLOR)


@contextmanager
def _figure(width: float, height: float) -> Iterator[Figure]:
    with matplotlib.rc_context(_RC):
        yield Figure(figsize=(width, height), layout="constrained")


def _svg(fig: Figure, css_class: str) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buffer, format="svg", metadata={"Date": None}, transparent=True)
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"\s*<metadata>.*?</metadata>", "", text, count=1, flags=re.DOTALL)  # RDF boilerplate
    prefix = f"k{next(_ids)}-"
    ids = set(re.findall(r'\bid="([^"]+)"', text))

    def prefixed(match: re.Match[str]) -> str:
        lead, name, tail = match.groups()
        return f"{lead}{prefix}{name}{tail}" if name in ids else match.group(0)

    # id="x", href="#x" and url(#x) in one pass; colors (#3b6ea8) are not ids and stay.
    text = re.sub(r'(\bid="|#)([^"#)\s]+)([")])', prefixed, text)
    # Path coordinates in points: two decimals are far below a pixel and halve the size.
    text = re.sub(r'\bd="([^"]*)"', lambda m: 'd="' + _ROUND.sub(_rounded, m.group(1)) + '"', text)
    text = re.sub(r'<svg([^>]*?) width="[^"]*" height="[^"]*"', rf'<svg\1 class="{css_class}"', text, count=1)
    return text.strip()


_ROUND = re.compile(r"-?\d+\.\d{3,}")


def _rounded(match: re.Match[str]) -> str:
    return f"{float(match.group(0)):.2f}"


def _view_range(arrays: Sequence[NDArray[np.float64]]) -> tuple[float, float]:
    lows, highs = [], []
    for a in arrays:
        low, high = quantiles(a, VIEW_QUANTILES)
        lows.append(float(low))
        highs.append(float(high))
    low, high = min(lows), max(highs)
    if high <= low:
        pad = abs(low) * 0.01 or 1.0
        return low - pad, high + pad
    return low, high


def _sides(m: MetricComparison) -> list[tuple[str, SideData, str]]:
    return [("base", m.base_data, BASE_COLOR), ("new", m.new_data, NEW_COLOR)]


def _samples(side: SideData) -> NDArray[np.float64] | None:
    if side.samples is not None and side.samples.size:
        return side.samples
    if side.series:
        return np.concatenate([s.values for s in side.series])
    return None


def _outside_note(ax: Axes, arrays: Sequence[NDArray[np.float64]], low: float, high: float) -> None:
    outside = sum(int(np.count_nonzero((a < low) | (a > high))) for a in arrays)
    if outside:
        total = sum(a.size for a in arrays)
        ax.set_title(f"{outside} of {total} values outside the view", loc="right", fontsize=7,
                     color="#6b7280", fontweight="normal")


def histogram_svg(m: MetricComparison, labels: tuple[str, str]) -> str | None:
    """Overlaid density histograms of both sides on common bins over the 0.5–99.5% range.

    Colors: ``BASE_COLOR`` / ``NEW_COLOR`` (the page carries the legend, so that long
    labels never cover data); ``labels`` only pick which sides exist.
    """
    data = [(label, s, color) for (_, side, color), label in zip(_sides(m), labels, strict=True)
            if (s := _samples(side)) is not None]
    if not data:
        return None
    arrays = [s for _, s, _ in data]
    low, high = _view_range(arrays)
    pooled = np.concatenate([a[(a >= low) & (a <= high)] for a in arrays])
    bins = min(MAX_HISTOGRAM_BINS, max(10, freedman_diaconis_bins(pooled) if pooled.size > 1 else 10))
    edge_list = np.linspace(low, high, bins + 1).tolist()
    with _figure(5.6, 2.7) as fig:
        ax = fig.add_subplot()
        for label, values, color in data:
            inside = values[(values >= low) & (values <= high)]
            ax.hist(inside, bins=edge_list, density=True, histtype="stepfilled", color=color, alpha=0.28, label=label)
            ax.hist(inside, bins=edge_list, density=True, histtype="step", color=color, linewidth=1.2)
            ax.axvline(float(np.median(values)), color=color, linestyle="--", linewidth=1.0)
        ax.set_xlim(low, high)
        ax.set_xlabel(m.unit or "value")
        ax.set_ylabel("density")
        ax.tick_params(axis="y", labelleft=False, length=0)  # the shape matters, not the density values
        ax.set_title("Distribution (dashed: medians)", loc="left")
        _outside_note(ax, arrays, low, high)
        return _svg(fig, "plot-svg histogram-svg")


def cdf_svg(m: MetricComparison, labels: tuple[str, str]) -> str | None:
    """Overlaid empirical CDFs (type-7 quantiles at 400 probabilities) over the same range."""
    data = [(label, s, color) for (_, side, color), label in zip(_sides(m), labels, strict=True)
            if (s := _samples(side)) is not None]
    if not data:
        return None
    arrays = [s for _, s, _ in data]
    low, high = _view_range(arrays)
    probabilities = np.linspace(0.0, 1.0, CDF_POINTS)
    with _figure(5.6, 2.7) as fig:
        ax = fig.add_subplot()
        for label, values, color in data:
            ax.step(quantiles(values, probabilities), probabilities, where="post", color=color, label=label)
        ax.axhline(0.5, color="#9ca3af", linestyle=":", linewidth=0.9)
        ax.set_xlim(low, high)
        ax.set_ylim(0, 1)
        ax.set_xlabel(m.unit or "value")
        ax.set_ylabel("fraction ≤ x")
        ax.set_title("Cumulative distribution", loc="left")
        return _svg(fig, "plot-svg cdf-svg")


def _thin(series: TrialSeries) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(index, value) points: the series itself, or medians of equal chunks when it is long."""
    values = series.values
    if values.size <= SERIES_POINTS_PER_TRIAL:
        return np.arange(values.size, dtype=np.float64), values
    chunk = math.ceil(values.size / SERIES_POINTS_PER_TRIAL)
    usable = values[: values.size // chunk * chunk].reshape(-1, chunk)
    centers = np.arange(usable.shape[0], dtype=np.float64) * chunk + (chunk - 1) / 2
    return centers, np.median(usable, axis=1)


def timeseries_svg(m: MetricComparison, labels: tuple[str, str]) -> str | None:
    """Per-trial series of each side, trials side by side, the warm-up of each trial shaded."""
    sides = [(label, side, color) for (_, side, color), label in zip(_sides(m), labels, strict=True)]
    if not any(side.series for _, side, _ in sides):
        return None
    everything = [s.values for _, side, _ in sides for s in side.series if s.values.size]
    low, high = _view_range(everything)
    pad = (high - low) * 0.08
    with _figure(11.2, 2.6) as fig:
        axes = fig.subplots(1, 2, sharey=True)
        for ax, (label, side, color) in zip(axes, sides, strict=True):
            ax.set_title(f"{label}: {len(side.series)} trials", loc="left")
            ax.set_xlabel("sample (trials one after another)")
            if not side.series:
                ax.text(0.5, 0.5, "no per-trial series", transform=ax.transAxes, ha="center", color="#6b7280")
                continue
            start = 0
            for number, trial in enumerate(side.series):
                warmup = trial.warmup_end
                if warmup:
                    ax.axvspan(start, start + warmup, color=WARMUP_COLOR, alpha=0.4, linewidth=0)
                x, y = _thin(trial)
                ax.plot(x + start, y, color=color, linewidth=0.9)
                if number:
                    ax.axvline(start, color="#9ca3af", linewidth=0.6)
                start += trial.values.size
            ax.set_xlim(0, max(start, 1))
        axes[0].set_ylim(low - pad, high + pad)
        axes[0].set_ylabel(m.unit or "value")
        return _svg(fig, "plot-svg timeseries-svg")


def forest_svg(report: ComparisonReport) -> str:
    """One row per metric: the change in % with its CI, colored by verdict; 0 marked."""
    rows = list(report.metrics)
    multi = len(report.new_labels) > 1
    height = 0.9 + 0.36 * max(len(rows), 1)
    with _figure(11.2, height) as fig:
        ax = fig.add_subplot()
        ax.grid(axis="y", visible=False)
        ax.axvline(0, color="#374151", linewidth=0.9)
        for position, m in enumerate(rows):
            y = len(rows) - 1 - position
            color = verdict_color(m.verdict)
            low, high = m.ci_pct
            ax.plot([low, high], [y, y], color=color, linewidth=2.2, solid_capstyle="round")
            ax.plot([m.change_pct], [y], marker="o", markersize=6, color=color, markeredgecolor="white")
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([
            m.metric + (f" ({report.new_label_of(m)})" if multi else "") for m in reversed(rows)
        ])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        extent = max([1.0, *(abs(v) for m in rows for v in (*m.ci_pct, m.change_pct) if math.isfinite(v))])
        ax.set_xlim(-extent * 1.15, extent * 1.15)
        right = ax.secondary_yaxis("right")
        right.set_yticks(range(len(rows)))
        right.set_yticklabels([f"{format_change(m.change_pct)}  {p_text(m.p_value)}" for m in reversed(rows)])
        right.tick_params(length=0)
        right.spines["right"].set_visible(False)
        ax.set_xlabel(f"change of {report.new_labels[0] if not multi else 'new'} vs {report.base_label} "
                      f"(%), bars: {report.confidence:.0%} CI")
        present = list(dict.fromkeys(m.verdict for m in rows))
        handles = [Line2D([], [], color=verdict_color(v), marker="o", linewidth=2.2, label=v) for v in present]
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(handles) or 1,
                  borderaxespad=0.2)
        return _svg(fig, "plot-svg forest-svg")
