"""One run over time (``kbench show RUN --over-time``): chunk medians with their spread against
sample index and time, and where the warm-up ends; as text, JSON and a self-contained HTML page.

The chunks are ``kbench.stats.chunks``; a chunk's time span runs from the start of its
first sample to the end of its last (``Measurement.start_times_s``: probe runs keep each
sample's gap to the one before; runs without it have no times). The warm-up cut is the
run's stored ``steady_state_index`` (robust MSER-5, ``kbench.stats.warmup``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from kbench.report.units import format_value
from kbench.stats.chunks import Chunk, chunk_summaries

if TYPE_CHECKING:
    from kbench.engine.stored_run import StoredRun

DEFAULT_CHUNKS = 10
BAR_WIDTH = 30
PLOTTED_SAMPLES = 2000
"""At most this many raw samples are drawn behind the chunks (evenly spaced in the run)."""


@dataclass(frozen=True)
class OverTime:
    """A run in chunks: ``times[i]`` = (start, end) of chunk i in seconds after the first sample
    started (None without per-sample times); ``steady_state_index`` = the first steady sample."""

    run_id: int
    metric: str
    unit: str
    values: np.ndarray
    starts: np.ndarray | None  # each sample's start, s
    chunks: list[Chunk]
    times: list[tuple[float, float]] | None
    steady_state_index: int

    @property
    def steady_time_s(self) -> float | None:
        if self.starts is None or not 0 < self.steady_state_index < self.values.size:
            return None
        return float(self.starts[self.steady_state_index])

    def warmup_medians(self) -> tuple[float, float] | None:
        """(median of the warm-up, median of the steady state), or None without a warm-up."""
        cut = self.steady_state_index
        if not 0 < cut < self.values.size:
            return None
        return float(np.median(self.values[:cut])), float(np.median(self.values[cut:]))


def over_time(run: StoredRun, chunks: int = DEFAULT_CHUNKS) -> OverTime:
    """The over-time view of a stored run (ValueError for a run without samples)."""
    values = np.asarray(run.values, dtype=np.float64)
    if not values.size:
        raise ValueError(f"run {run.run_id} has no samples to show over time")
    starts = run.measurement.start_times_s()
    if starts is not None and starts.size != values.size:
        starts = None
    found = chunk_summaries(values, chunks)
    times = None
    if starts is not None:
        hz = float(run.measurement.header["timer"]["hz"])
        ends = starts + run.measurement.columns["ticks"].astype(np.float64) / hz
        times = [(float(starts[c.first]), float(ends[c.last])) for c in found]
    steady = run.summary.steady_state_index if run.summary is not None else 0
    return OverTime(run.run_id, run.metric, run.unit, values, starts, found, times, int(steady))


def _range(a: float, b: float, unit: str) -> str:
    return f"{format_value(a, unit)}…{format_value(b, unit)}"


def text_lines(view: OverTime) -> list[str]:
    """A row per chunk (samples, time, median, p25…p75, mean, a bar placing the median), with
    the warm-up's end marked between the rows where it falls."""
    unit = view.unit
    low = min(c.low for c in view.chunks)
    high = max(c.high for c in view.chunks)
    sizes = sorted({c.n for c in view.chunks})
    size = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}–{sizes[-1]}"
    lines = [f"over time: {len(view.chunks)} chunks of {size} samples, {view.metric} ({unit}); "
             f"bar: the chunk's median between {format_value(low, unit)} and {format_value(high, unit)}"]
    rows = []
    for i, c in enumerate(view.chunks):
        when = _when(view.times[i]) if view.times else "-"
        share = (c.median - low) / (high - low) if high > low else 0.5
        bar = "█" * max(1, round(share * BAR_WIDTH))
        rows.append((f"{c.first}–{c.last}", when, format_value(c.median, unit), _range(c.low, c.high, unit),
                     format_value(c.mean, unit), bar))
    header = ("samples", "time", "median", "p25…p75", "mean", "")
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(5)]

    def row(cells: tuple[str, ...]) -> str:
        return "  " + "  ".join(str(cell).ljust(widths[k]) if k < 5 else str(cell)
                                for k, cell in enumerate(cells)).rstrip()

    lines.append(row(header))
    cut = view.steady_state_index
    for c, cells in zip(view.chunks, rows, strict=True):
        if cut > 0 and c.first <= cut <= c.last:
            lines.append(_cut_line(view))
        lines.append(row(cells))
    warm = view.warmup_medians()
    if warm is None:
        lines.append("  no warm-up detected: the run is steady from its first sample")
    else:
        lines.append(f"  warm-up: samples 0–{cut - 1}, median {format_value(warm[0], unit)}; "
                     f"steady from sample {cut}, median {format_value(warm[1], unit)}")
    if view.times is None:
        lines.append("  (no per-sample times: this run was stored without the probe's gap_ticks)")
    return lines


def _when(span: tuple[float, float]) -> str:
    """``1.204ms…2.500ms``: a chunk's time span, in the unit that keeps its digits."""
    return _range(span[0], span[1], "s")


def _cut_line(view: OverTime) -> str:
    at = view.steady_time_s
    when = f" (at {format_value(at, 's')})" if at is not None else ""
    return f"  ── warm-up ends: steady from sample {view.steady_state_index}{when} ──"


def to_json(view: OverTime) -> dict[str, Any]:
    return {
        "run_id": view.run_id, "metric": view.metric, "unit": view.unit, "n": int(view.values.size),
        "chunks": [c.to_json() | ({"start_s": view.times[i][0], "end_s": view.times[i][1]} if view.times else {})
                   for i, c in enumerate(view.chunks)],
        "steady_state_index": view.steady_state_index, "steady_state_time_s": view.steady_time_s,
        "has_times": view.times is not None,
    }


def _plot(view: OverTime, by_time: bool) -> str | None:
    """Chunk medians (line) with their p25–p75 band over the raw samples (dots), the warm-up's
    end dashed; x is the sample index, or the time when ``by_time``."""
    from kbench.report.comparison import plots

    if by_time and (view.times is None or view.starts is None):
        return None
    values = view.values
    shown = np.unique(np.linspace(0, values.size - 1, min(values.size, PLOTTED_SAMPLES)).astype(int))
    low, high = (float(q) for q in np.quantile(values, plots.VIEW_QUANTILES))
    low = min(low, min(c.low for c in view.chunks))
    high = max(high, max(c.high for c in view.chunks))
    if view.times is not None and by_time:
        assert view.starts is not None
        x_points = view.starts[shown]
        # a chunk is drawn at its middle sample's start: a long pause inside it moves its time span, not it
        x_chunks = [float(view.starts[(c.first + c.last) // 2]) for c in view.chunks]
        cut_x = view.steady_time_s
        label = "time since the first sample (s)"
    else:
        x_points = shown.astype(np.float64)
        x_chunks = [(c.first + c.last) / 2 for c in view.chunks]
        cut_x = float(view.steady_state_index) if view.steady_state_index > 0 else None
        label = "sample index"
    with plots._figure(7.2, 2.9) as fig:
        ax = fig.add_subplot()
        inside = (values[shown] >= low) & (values[shown] <= high)
        ax.scatter(x_points[inside], values[shown][inside], s=2, color="#9ca3af", alpha=0.35, linewidths=0,
                   label="samples")
        ax.fill_between(x_chunks, [c.low for c in view.chunks], [c.high for c in view.chunks],
                        color=plots.BASE_COLOR, alpha=0.25, linewidth=0, label="chunk p25–p75")
        ax.plot(x_chunks, [c.median for c in view.chunks], color=plots.BASE_COLOR, marker="o", markersize=3,
                label="chunk median")
        if cut_x is not None:
            ax.axvline(cut_x, color=plots.WARMUP_COLOR, linestyle="--", linewidth=1.4, label="warm-up ends")
        pad = (high - low) * 0.05 or abs(high) * 0.01 or 1.0
        ax.set_ylim(low - pad, high + pad)
        ax.set_xlabel(label)
        ax.set_ylabel(view.unit)
        ax.legend(loc="upper right", ncols=4)
        ax.set_title(f"{view.metric} by {'time' if by_time else 'sample'}", loc="left")
        return plots._svg(fig, f"plot-svg over-time-{'time' if by_time else 'index'}")


def render_html(view: OverTime) -> str:
    """A self-contained page (``report/templates/over_time.html``): both plots and the table of chunks."""
    from kbench.report.templating import render, style_sheet, trusted

    unit = view.unit
    chunks = []
    for i, c in enumerate(view.chunks):
        cut = view.steady_state_index > 0 and c.first <= view.steady_state_index <= c.last
        chunks.append({
            "cut": _cut_line(view).strip() if cut else None, "first": c.first, "last": c.last,
            "when": _when(view.times[i]) if view.times else "-", "median": format_value(c.median, unit),
            "spread": _range(c.low, c.high, unit), "mean": format_value(c.mean, unit), "n": c.n,
        })
    warm = view.warmup_medians()
    note = ("no warm-up detected: the run is steady from its first sample" if warm is None else
            f"warm-up: samples 0–{view.steady_state_index - 1}, median {format_value(warm[0], unit)}; steady from "
            f"sample {view.steady_state_index}, median {format_value(warm[1], unit)}")
    return render("over_time.html", title=f"run {view.run_id} over time: {view.metric}",
                  css=style_sheet("over_time.css"), samples=view.values.size, chunks=chunks, note=note,
                  plots=[trusted(svg) for svg in (_plot(view, False), _plot(view, True)) if svg])
