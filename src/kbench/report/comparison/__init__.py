"""Comparison reports (base vs new kernels, commits or programs): one renderer per format.

Every renderer is a module with ``render(report: ComparisonReport) -> str``; ``FORMATS``
maps the format name the CLI asks for to that function (importing its module then), so
adding a format is one new module and one line here. Formats:

- ``text``: LKP/0-Day style ``%change`` table, headlines, overall geometric mean, machine;
- ``json``: one object per metric (plus the report's labels, context and parameters);
- ``markdown``: a GitHub table for issues and mails;
- ``html``: one self-contained page with inline SVG plots (histogram, CDF, per-trial series
  with warm-up, forest plot of changes);
- ``gobench``: the Go benchmark text format for ``benchstat`` (``gobench.write_files``
  writes one file per side).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Final

from kbench.report.comparison.model import (
    ComparisonReport,
    MetricComparison,
    SideData,
    TrialSeries,
    metric_from_dict,
    side_from_trials,
)

Renderer = Callable[[ComparisonReport], str]


class _Renderers(Mapping[str, Renderer]):
    """Format name → its module's ``render``, the module imported when the format is asked for
    (the text report must not pay for the HTML one's matplotlib)."""

    def __init__(self, modules: dict[str, str]):
        self._modules = modules

    def __getitem__(self, name: str) -> Renderer:
        module = importlib.import_module(f"{__name__}.{self._modules[name]}")
        renderer: Renderer = module.render
        return renderer

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def __len__(self) -> int:
        return len(self._modules)


FORMATS: Final[Mapping[str, Renderer]] = _Renderers({
    "text": "text",
    "json": "json_report",
    "markdown": "markdown",
    "html": "html",
    "gobench": "gobench",
})

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
