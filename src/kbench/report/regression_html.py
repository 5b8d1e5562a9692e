"""The regression report as HTML: a self-contained page (CLI) or a fragment (the dashboard).

Nothing is fetched and no script runs: each entry has an inline SVG of its series around
the change and, when its two runs counted or were profiled, the why rows under the headline
(``kbench.report.why``: ``perf-stat.*`` counters' %change, ``perf-profile.*`` shares).
Hooks for tests and styling: ``article.regression[data-series][data-run][data-verdict]``,
``svg.change-plot``, ``table.before-after``, ``table.why`` (``tr[data-row]``), ``ol.git-log``,
``pre.reproduce``.

The markup is ``report/templates/regression_entries.html`` (in ``regression.html`` for the page;
Jinja2, ``kbench.report.templating``) and its style sheets ``regression-page.css`` and
``regression.css`` (the dashboard's page takes the latter).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from kbench.history.confirmed import Confirmation
from kbench.history.regressions import RegressionEntry, RegressionReport, noise_pct
from kbench.report.observation_summary import HEADERS, TITLE, summary_rows
from kbench.report.regression_text import SUSPECTED_NOTE, side_by_side, subject
from kbench.report.templating import render, style_sheet
from kbench.report.units import format_measure
from kbench.report.why import WhyRows, number_text

if TYPE_CHECKING:
    from markupsafe import Markup

PLOT_CONTEXT = 60
"""Points shown on each side of the change in an entry's plot."""

Link = Callable[[str, int | None], str]
"""(series id, run id or None) → URL; the dashboard links entries to its pages."""


def entry_css() -> Markup:
    """The entries' style sheet (the dashboard's regressions page puts it in its head)."""
    return style_sheet("regression.css")


def render_page(report: RegressionReport, scope: str, why: Mapping[str, WhyRows] | None = None) -> str:
    return render("regression.html", title="kbench regression report",
                  css=style_sheet("regression-page.css", "regression.css"), **_values(report, scope, None, why))


def fragment(report: RegressionReport, scope: str, link: Link | None = None,
             why: Mapping[str, WhyRows] | None = None) -> str:
    """The confirmed regressions, then the suspected change points; ``why``: each entry's why rows by
    its key (``kbench.report.why.report_why_rows``)."""
    return render("regression_entries.html", **_values(report, scope, link, why))


def _values(report: RegressionReport, scope: str, link: Link | None,
            why: Mapping[str, WhyRows] | None) -> dict[str, Any]:
    found = why or {}
    return {
        "counts": report.counts(), "scope": scope, "suspected_note": SUSPECTED_NOTE,
        "summary_title": TITLE, "summary_headers": HEADERS, "summary": [row.cells() for row in summary_rows(report)],
        "confirmations": [_confirmation(c, found.get(c.key)) for c in report.confirmed],
        "entries": [_entry(e, link, found.get(e.key)) for e in report.suspected],
    }


def _confirmation(confirmation: Confirmation, why: WhyRows | None) -> dict[str, Any]:
    return {
        "culprit": confirmation.culprit, "culprit_subject": confirmation.subject, "describe": confirmation.describe(),
        "status": confirmation.status_text, "state": confirmation.status,
        "triage": None if confirmation.triage is None else confirmation.triage.status,
        "machine": None if confirmation.machine is None else confirmation.machine.describe(),
        "params": " ".join(f"{k}={v}" for k, v in confirmation.params.items()) or "-",
        "found_by": (f"kbench watch {confirmation.watch_id} on {confirmation.branch} of "
                     f"{confirmation.origin.repo or '?'}, finding {confirmation.finding_id}"),
        "subject": subject(confirmation), "table": "\n".join(side_by_side(confirmation)),
        "why": why_values(why), "mail": confirmation.report, "reproduce": "\n".join(confirmation.reproduce()),
    }


def why_values(rows: WhyRows | None) -> dict[str, Any] | None:
    """The why rows as ``table.why`` shows them: base, %change (points for profile shares), new, name."""
    if rows is None or rows.empty:
        return None
    counters = []
    for counter in rows.counters:
        change = counter.change_pct
        counters.append({
            "trend": "" if not math.isfinite(change) or change == 0 else (" grew" if change > 0 else " shrank"),
            "name": counter.name, "unit": counter.unit, "base": number_text(counter.base),
            "new": number_text(counter.new), "change": f"{change:+.1f}%" if math.isfinite(change) else "",
        })
    profile = [{
        "trend": " grew" if row.change_pct > 0 else " shrank" if row.change_pct < 0 else "",
        "name": f"perf-profile.{row.kind}.{row.symbol}", "base": f"{row.base_pct:.2f}%",
        "change": f"{row.change_pct:+.2f}p", "new": f"{row.new_pct:.2f}%", "within_noise": row.within_noise,
    } for row in rows.profile_rows()]
    delta = rows.delta
    return {"base_run": rows.base_run, "new_run": rows.new_run, "counters": counters, "profile": profile,
            "delta": None if delta is None else {"event": delta.event, "base_samples": delta.base_samples,
                                                 "new_samples": delta.new_samples, "note": rows.note}}


def _entry(entry: RegressionEntry, link: Link | None, why: WhyRows | None = None) -> dict[str, Any]:
    s, point = entry.series, entry.point
    c, correlated = point.change, point.correlated
    versions = []
    for name, version in (("last run before", correlated.before), ("first run after", correlated.after)):
        versions.append({
            "name": name, "run_id": version.run_id, "link": link(s.id, version.run_id) if link else None,
            "commit": version.commit[:12] if version.commit else None,
            "when": f"{version.started_at:%Y-%m-%d %H:%M} UTC",
            "kernel": version.kernel or None, "label": version.label or None,
        })
    return {
        "series": s.id, "series_link": link(s.id, None) if link else None, "run_id": point.run_id,
        "verdict": point.verdict, "status": entry.status, "subject": entry.subject,
        "benchmark": s.benchmark, "params": s.describe_params(), "machine": entry.machine.describe(),
        "target": s.target, "versions": versions, "metric": s.metric, "change": f"{c.change_pct:+.1f}%",
        "p": f"{c.p_value:.2g}",
        "before": {"median": format_measure(c.before.median, s.unit), "spread": f"{c.before.stdev_pct:.1f}%",
                   "n": c.before.n},
        "after": {"median": format_measure(c.after.median, s.unit), "spread": f"{c.after.stdev_pct:.1f}%",
                  "n": c.after.n}, "noise": f"±{noise_pct(point):.1f}%",
        "why": why_values(why), "plot": _plot(entry),
        "git_log": None if correlated.git_log is None else [
            {"id": g.id[:12], "subject": g.subject, "author": g.author, "date": g.date[:10]}
            for g in correlated.git_log],
        "commit_range": correlated.commit_range or "", "git_error": correlated.git_error,
        "reproduce": "\n".join(entry.reproduce),
    }


def _plot(entry: RegressionEntry, width: int = 640, height: int = 160) -> dict[str, Any] | None:
    """The series' points around the change, the segment medians, the change marked (the numbers
    of ``svg.change-plot``)."""
    s, c = entry.series, entry.point.change
    start = max(0, c.index - PLOT_CONTEXT)
    stop = min(len(s.points), c.index + PLOT_CONTEXT)
    values = s.values()[start:stop]
    if values.size < 2:
        return None
    pad = 8
    low, high = float(values.min()), float(values.max())
    span = (high - low) or abs(high) or 1.0

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i - start) / max(stop - start - 1, 1)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * (v - low) / span

    cut = x(c.index) - (x(c.index) - x(c.index - 1)) / 2
    return {
        "width": width, "height": height, "pad": pad, "right": width - pad, "cut": f"{cut:.1f}",
        "before_y": f"{y(c.before.median):.1f}", "after_y": f"{y(c.after.median):.1f}",
        "dots": [(f"{x(start + i):.1f}", f"{y(float(v)):.1f}", "#e07a1f" if start + i >= c.index else "#3b6ea8")
                 for i, v in enumerate(values)],
        "label": f"{format_measure(float(np.min(values)), s.unit)} … {format_measure(float(np.max(values)), s.unit)}",
    }
