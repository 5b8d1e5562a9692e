"""Inline SVG sparklines for the series index (no script needed to draw them)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

import numpy as np

SPARK_POINTS = 80


def downsample(values: Sequence[float] | np.ndarray, points: int = SPARK_POINTS) -> list[float]:
    """Bucket means when there are more values than ``points``."""
    data = np.asarray(values, dtype=np.float64)
    if data.size > points:
        data = np.array([bucket.mean() for bucket in np.array_split(data, points)])
    return [float(v) for v in data]


def sparkline_svg(values: Sequence[float], change_at: float | None = None, width: int = 160,
                  height: int = 28, title: str = "", span: Sequence[float] | None = None) -> str:
    """A polyline of ``values`` from ``span``'s low to its high (the series' ``drawn_range``, scaled
    to its noise), else from their minimum to their maximum; ``change_at`` (0–1 along the line)
    draws the latest change point."""
    if not values:
        return ""
    pad = 2
    low, high = (span[0], span[1]) if span is not None else (min(values), max(values))
    span_height = (high - low) or 1.0
    step = (width - 2 * pad) / max(len(values) - 1, 1)
    scale = (height - 2 * pad) / span_height
    points = " ".join(f"{pad + i * step:.1f},{height - pad - scale * (v - low):.1f}" for i, v in enumerate(values))
    mark = ""
    if change_at is not None:
        x = pad + (width - 2 * pad) * change_at
        mark = f'<line x1="{x:.1f}" x2="{x:.1f}" y1="0" y2="{height}" stroke="#c62828" stroke-width="1"/>'
    return (
        f'<svg class="sparkline" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">{mark}<polyline fill="none" stroke="#3b6ea8" stroke-width="1.3" '
        f'points="{points}"/></svg>'
    )
