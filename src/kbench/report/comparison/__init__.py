"""Comparison reports (base vs new kernels, commits or programs): one renderer per format.

Every renderer is a module with ``render(report: ComparisonReport) -> str``; ``FORMATS``
maps the format name the CLI asks for to that function, so adding a format is one new
module and one line here. Formats:

- ``text``: LKP/0-Day style ``%change`` table, headlines, overall geometric mean, machine;
- ``json``: one object per metric (plus the report's labels, context and parameters);
- ``markdown``: a GitHub table for issues and mails;
- ``html``: one self-contained page with inline SVG plots (histogram, CDF, per-trial series
  with warm-up, forest plot of changes);
- ``gobench``: the Go benchmark text format for ``benchstat`` (``gobench.write_files``
  writes one file per side).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kbench.report.comparison import gobench, html, json_report, markdown, text
from kbench.report.comparison.model import (
    ComparisonReport,
    MetricComparison,
    SideData,
    TrialSeries,
    metric_from_dict,
    side_from_trials,
)

Renderer = Callable[[ComparisonReport], str]

FORMATS: Final[dict[str, Renderer]] = {
    "text": text.render,
    "json": json_report.render,
    "markdown": markdown.render,
    "html": html.render,
    "gobench": gobench.render,
}

# File name extension per format, for ``--output`` defaults.
EXTENSIONS: Final[dict[str, str]] = {"text": "txt", "json": "json", "markdown": "md", "html": "html", "gobench": "txt"}


def render(report: ComparisonReport, fmt: str) -> str:
    """Render ``report`` in format ``fmt`` (a key of ``FORMATS``); ValueError names the choices."""
    try:
        renderer = FORMATS[fmt]
    except KeyError:
        raise ValueError(f"unknown comparison format {fmt!r}; choose one of {', '.join(FORMATS)}") from None
    return renderer(report)


__all__ = [
    "EXTENSIONS",
    "FORMATS",
    "ComparisonReport",
    "MetricComparison",
    "Renderer",
    "SideData",
    "TrialSeries",
    "metric_from_dict",
    "render",
    "side_from_trials",
]
