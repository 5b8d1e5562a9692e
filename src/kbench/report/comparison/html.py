"""Self-contained HTML comparison: one file, inline CSS and SVG, nothing fetched.

The page is ``report/templates/comparison.html`` (Jinja2, ``kbench.report.templating``); this
module gives it its values: the numbers formatted, the plots drawn.

The page runs no script of its own; a comparison that profiled its sides carries their
flame graphs, each an SVG with its own small zoom-and-search script (``kbench.profile.flame``).

Stable hooks for tests and for users' own styling:

- ``#summary`` (cards + ``#summary-table``, one ``tr.metric-row[data-verdict]`` per metric),
  ``#headlines``, ``#forest-plot`` (a ``figure`` holding an ``svg.forest-svg``);
- one ``section.metric-section`` per metric and new label, ``id="metric-<slug>"``, with
  ``data-metric``, ``data-new-label`` and ``data-verdict`` (``regression``, ``improvement``,
  ``no-change`` or the slug of another verdict), holding ``figure.plot-histogram``,
  ``figure.plot-cdf`` and ``figure.plot-timeseries`` (each an inline ``svg``) when the
  report carries samples / series for that metric;
- ``#run-context`` and ``#test-parameters`` tables;
- with profiles: ``#profile`` holding one ``section.profile-delta`` per new label
  (``data-new-label``; a ``table.profile-delta-table`` and ``figure.flame-diff``) and
  ``figure.flame-side`` per side.
"""

from __future__ import annotations

import re
from typing import Any

from kbench.report.comparison import plots
from kbench.report.comparison.common import (
    direction_text,
    flat_items,
    format_change,
    format_ci,
    format_number,
    format_p,
    headline,
    headlines,
    method_note,
    overall,
    overall_sentences,
    verdict_slug,
)
from kbench.report.comparison.model import ComparisonReport, MetricComparison, ProfileComparison, SideData
from kbench.report.comparison.profiles import growth_note
from kbench.report.templating import render as render_template
from kbench.report.templating import style_sheet, trusted
from kbench.report.units import format_ns

CSS_FILES = ("comparison.css",)
"""The page's style sheet (``report/templates``); the bisection page builds on it."""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "metric"


def section_id(report: ComparisonReport, m: MetricComparison) -> str:
    suffix = f"--{_slug(report.new_label_of(m))}" if len(report.new_labels) > 1 else ""
    return f"metric-{_slug(m.metric)}{suffix}"


def _stddev(side: SideData) -> str:
    pct = side.stddev_pct
    return "" if pct is None else f"±{pct:.1f}%"


def _value(m: MetricComparison, value: float) -> dict[str, str | None]:
    """The value, and in ns as well for a metric counted in cycles."""
    ns = m.in_ns(value)
    return {"number": format_number(value), "ns": None if ns is None else format_ns(ns)}


def _row(report: ComparisonReport, m: MetricComparison) -> dict[str, Any]:
    return {
        "slug": verdict_slug(m.verdict), "verdict": m.verdict, "metric": m.metric, "unit": m.unit,
        "section_id": section_id(report, m), "new_label": report.new_label_of(m),
        "base": _value(m, m.base), "base_stddev": _stddev(m.base_data), "new": _value(m, m.new),
        "new_stddev": _stddev(m.new_data), "change": format_change(m.change_pct), "ci": format_ci(m.ci_pct),
        "p": format_p(m.p_value), "trials": f"{m.trials[0]}/{m.trials[1]}",
    }


def _cards(report: ComparisonReport) -> list[dict[str, str]]:
    cards = []
    for label in report.new_labels:
        s = overall(report, label)
        if not s.shown:
            continue
        pct = s.better_pct
        value = "n/a" if pct is None else f"{abs(pct):.1f}% {'better' if pct >= 0 else 'worse'}"
        what = f"overall, geometric mean ({label})" if len(report.new_labels) > 1 else "overall, geometric mean"
        cards.append({"css_class": "overall-card", "value": value, "what": what})
    for css_class, verdict, what in (("regression", "regression", "regressions"),
                                     ("improvement", "improvement", "improvements"),
                                     ("no-change", "no change", "no change")):
        cards.append({"css_class": css_class, "value": str(sum(m.verdict == verdict for m in report.metrics)),
                      "what": what})
    return cards


def _section(report: ComparisonReport, m: MetricComparison) -> dict[str, Any]:
    label = report.new_label_of(m)
    labels = (f"{report.base_label} (base)", f"{label} (new)")
    figures = [
        (kind, trusted(svg), caption)
        for kind, svg, caption in (
            ("histogram", plots.histogram_svg(m, labels), "Histogram of all samples, base vs new."),
            ("cdf", plots.cdf_svg(m, labels), "Empirical CDF of all samples, base vs new."),
            ("timeseries", plots.timeseries_svg(m, labels),
             "Per-trial time series; shaded: warm-up before the detected steady state (MSER-5)."),
        )
        if svg is not None
    ]
    reasons = [("reason", m.reason)] if m.reason else []
    reasons += [("reason warning", w) for w in m.warnings]
    reasons += [("reason design", f"design: {m.design}")] if m.design else []
    return {
        "id": section_id(report, m), "metric": m.metric, "new_label": label, "slug": verdict_slug(m.verdict),
        "verdict": m.verdict,
        "facts": (f"{m.unit}, {direction_text(m.direction)} · base {format_number(m.base)} → new "
                  f"{format_number(m.new)} · trials {m.trials[0]}/{m.trials[1]}"),
        "sentence": headline(report, m), "reasons": reasons, "figures": figures,
        "warmup": any(s.series for s in (m.base_data, m.new_data)),
    }


def _profile(profile: ProfileComparison | None, growth: int = 10, shrink: int = 5) -> dict[str, Any] | None:
    if profile is None:
        return None
    deltas = [{
        "new_label": delta.new_label, "base_label": delta.base_label, "growth_note": growth_note(delta),
        "event": delta.event, "base_samples": delta.base_samples, "new_samples": delta.new_samples,
        "diff_svg": trusted(profile.diff_flames.get(delta.new_label) or None),
        "rows": [{"symbol": r.symbol, "kernel": r.where == "kernel", "kind": r.kind, "base_pct": f"{r.base_pct:.2f}",
                  "new_pct": f"{r.new_pct:.2f}", "change": f"{r.change_pct:+.2f}", "noise": f"{r.noise_pp:.2f}",
                  "change_class": "regression" if r.change_pct > 0 else "improvement"}
                 for r in [*delta.growth(growth), *delta.shrink(shrink)]],
    } for delta in profile.deltas]
    return {"note": profile.note, "deltas": deltas,
            "flames": [(label, trusted(svg)) for label, svg in profile.flames.items()]}


def render(report: ComparisonReport) -> str:
    """The whole page as one string (UTF-8 when written)."""
    sections = [_section(report, m) for m in report.metrics]  # before the forest plot: the plots' ids count up
    return render_template(
        "comparison.html", title=report.title, css=style_sheet(*CSS_FILES),
        kind=f"{report.label_kind} " if report.label_kind else "", base_label=report.base_label,
        new_labels=report.new_labels, method_note=method_note(report), cards=_cards(report),
        overall_sentences=overall_sentences(report), headlines=headlines(report),
        multi=len(report.new_labels) > 1, rows=[_row(report, m) for m in report.metrics],
        profile=_profile(report.profile), forest_svg=trusted(plots.forest_svg(report)),
        confidence=f"{report.confidence:.0%}", sections=sections,
        context=flat_items(report.context), parameters=flat_items(report.parameters),
    )
