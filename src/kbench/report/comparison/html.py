"""Self-contained HTML comparison: one file, inline CSS and SVG, nothing fetched.

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
from html import escape

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
from kbench.report.comparison.model import ComparisonReport, MetricComparison, SideData
from kbench.report.comparison.profiles import growth_note
from kbench.report.units import format_ns


def page(title: str, css: str, main: str) -> str:
    """A whole self-contained HTML document: ``main`` (already escaped HTML) in kbench's frame."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="kbench">
<title>{escape(title)}</title>
<style>{css}</style>
</head>
<body>
<main>
{main}
</main>
</body>
</html>
"""


CSS = """
:root { --fg: #1f2937; --muted: #6b7280; --line: #e5e7eb; --bg: #f8fafc; --card: #ffffff;
  --regression: #c62828; --improvement: #2e7d32; --no-change: #6b7280; --other: #b7791f;
  --base: #3b6ea8; --new: #e07a1f; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1180px; margin: 0 auto; padding: 24px 28px 48px; }
header.report-header { border-bottom: 1px solid var(--line); margin-bottom: 18px; padding-bottom: 12px; }
h1 { font-size: 24px; margin: 0 0 6px; letter-spacing: -0.01em; }
h2 { font-size: 17px; margin: 28px 0 10px; }
h3 { font-size: 15px; margin: 0; font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.subtitle { color: var(--muted); margin: 0; }
.label { font-family: ui-monospace, Menlo, Consolas, monospace; font-weight: 600; }
.label.base { color: var(--base); } .label.new { color: var(--new); }
.cards { display: flex; gap: 12px; flex-wrap: wrap; margin: 14px 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 16px;
  min-width: 150px; }
.card .value { font-size: 22px; font-weight: 700; } .card .what { color: var(--muted); font-size: 12px; }
.card.regression .value { color: var(--regression); } .card.improvement .value { color: var(--improvement); }
.overall { font-weight: 600; margin: 6px 0; }
ul.headlines { padding-left: 18px; margin: 6px 0; }
ul.headlines li { margin: 3px 0; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
table { border-collapse: collapse; background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  font-size: 13px; width: 100%; }
th, td { padding: 6px 10px; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: #f1f5f9; font-weight: 600; color: #374151; white-space: nowrap; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.metric { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
tr:last-child td { border-bottom: none; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 12px; font-weight: 600;
  color: #fff; background: var(--other); white-space: nowrap; }
.badge.regression { background: var(--regression); } .badge.improvement { background: var(--improvement); }
.badge.no-change { background: #e5e7eb; color: #374151; }
.change.regression { color: var(--regression); font-weight: 600; }
.change.improvement { color: var(--improvement); font-weight: 600; }
figure { margin: 0; }
figure.plot { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 6px; }
figure.plot svg { display: block; width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 12px; padding: 4px 6px 0; }
section.metric-section { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 14px 16px 16px; margin: 16px 0; border-left: 5px solid var(--no-change); }
section.metric-section[data-verdict="regression"] { border-left-color: var(--regression); }
section.metric-section[data-verdict="improvement"] { border-left-color: var(--improvement); }
.section-head { display: flex; align-items: center; gap: 12px; flex-wrap: wrap; }
.section-head .facts { color: var(--muted); font-size: 13px; }
.sentence { margin: 8px 0 10px; font-size: 13px; }
.reason { color: var(--muted); font-size: 12.5px; margin: -4px 0 10px; }
.legend { display: flex; gap: 18px; font-size: 12.5px; color: #374151; margin: 0 0 6px; flex-wrap: wrap; }
.legend .swatch { display: inline-block; width: 12px; height: 12px; border-radius: 3px; margin-right: 6px;
  vertical-align: -1px; }
.swatch.base { background: var(--base); } .swatch.new { background: var(--new); }
.swatch.warmup { background: #fbbf24; opacity: 0.55; }
.plots { display: grid; grid-template-columns: 1fr 1fr; gap: 10px; }
.plots figure.plot-timeseries { grid-column: 1 / -1; }
.plots figure.plot { border: none; padding: 0; }
h3.kv-title { font-family: inherit; margin: 0 0 8px; }
.kv { display: grid; grid-template-columns: 1fr 1fr; gap: 16px; }
.kv table td:first-child { color: #374151; white-space: nowrap; width: 35%;
  font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12.5px; }
footer { color: var(--muted); font-size: 12px; margin-top: 28px; }
@media (max-width: 800px) { .plots, .kv { grid-template-columns: 1fr; } }
@media print { body { background: #fff; } section.metric-section { break-inside: avoid; } }
"""


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "metric"


def section_id(report: ComparisonReport, m: MetricComparison) -> str:
    suffix = f"--{_slug(report.new_label_of(m))}" if len(report.new_labels) > 1 else ""
    return f"metric-{_slug(m.metric)}{suffix}"


def _badge(verdict: str) -> str:
    return f'<span class="badge {verdict_slug(verdict)}">{escape(verdict)}</span>'


def _stddev(side: SideData) -> str:
    pct = side.stddev_pct
    return "" if pct is None else f"±{pct:.1f}%"


def _value(m: MetricComparison, value: float) -> str:
    """The value, and in ns as well for a metric counted in cycles."""
    ns = m.in_ns(value)
    return format_number(value) + ("" if ns is None else f' <span class="unit">({escape(format_ns(ns))})</span>')


def _summary_table(report: ComparisonReport) -> str:
    multi = len(report.new_labels) > 1
    head = (
        "<tr><th>metric</th>" + ("<th>new</th>" if multi else "")
        + "<th class=num>base</th><th class=num>±</th><th class=num>new</th><th class=num>±</th>"
        "<th class=num>change</th><th class=num>CI</th><th class=num>p</th><th>verdict</th>"
        "<th class=num>trials</th></tr>"
    )
    rows = []
    for m in report.metrics:
        slug = verdict_slug(m.verdict)
        rows.append(
            f'<tr class="metric-row" data-verdict="{slug}" data-metric="{escape(m.metric)}">'
            f'<td class="metric"><a href="#{section_id(report, m)}">{escape(m.metric)}</a>'
            f' <span class="unit">({escape(m.unit)})</span></td>'
            + (f'<td class="label">{escape(report.new_label_of(m))}</td>' if multi else "")
            + f'<td class="num">{_value(m, m.base)}</td><td class="num">{_stddev(m.base_data)}</td>'
            f'<td class="num">{_value(m, m.new)}</td><td class="num">{_stddev(m.new_data)}</td>'
            f'<td class="num change {slug}">{format_change(m.change_pct)}</td>'
            f'<td class="num">{format_ci(m.ci_pct)}</td><td class="num">{escape(format_p(m.p_value))}</td>'
            f"<td>{_badge(m.verdict)}</td><td class=num>{m.trials[0]}/{m.trials[1]}</td></tr>"
        )
    return f'<table id="summary-table"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>'


def _cards(report: ComparisonReport) -> str:
    cards = []
    for label in report.new_labels:
        s = overall(report, label)
        if not s.shown:
            continue
        pct = s.better_pct
        overall_value = "n/a" if pct is None else f"{abs(pct):.1f}% {'better' if pct >= 0 else 'worse'}"
        what = f"overall, geometric mean ({escape(label)})" if len(report.new_labels) > 1 else "overall, geometric mean"
        cards.append(f'<div class="card overall-card"><div class="value">{overall_value}</div>'
                     f'<div class="what">{what}</div></div>')
    counts = [
        ("regression", sum(m.verdict == "regression" for m in report.metrics), "regressions"),
        ("improvement", sum(m.verdict == "improvement" for m in report.metrics), "improvements"),
        ("no-change", sum(m.verdict == "no change" for m in report.metrics), "no change"),
    ]
    cards.extend(f'<div class="card {cls}"><div class="value">{n}</div><div class="what">{what}</div></div>'
                 for cls, n, what in counts)
    return f'<div class="cards">{"".join(cards)}</div>'


def _kv_table(table_id: str, mapping: object) -> str:
    items = flat_items(mapping)
    rows = "".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in items)
    if not rows:
        rows = '<tr><td colspan="2">none recorded</td></tr>'
    return f'<table id="{table_id}"><tbody>{rows}</tbody></table>'


def _figure(kind: str, svg: str | None, caption: str) -> str:
    if svg is None:
        return ""
    return f'<figure class="plot plot-{kind}">{svg}<figcaption>{escape(caption)}</figcaption></figure>'


def _legend(report: ComparisonReport, m: MetricComparison) -> str:
    warmup = any(s.series for s in (m.base_data, m.new_data))
    return (
        '<div class="legend">'
        f'<span><span class="swatch base"></span>{escape(report.base_label)} (base)</span>'
        f'<span><span class="swatch new"></span>{escape(report.new_label_of(m))} (new)</span>'
        + ('<span><span class="swatch warmup"></span>warm-up (before the steady state)</span>' if warmup else "")
        + "</div>"
    )


def _section(report: ComparisonReport, m: MetricComparison) -> str:
    label = report.new_label_of(m)
    labels = (f"{report.base_label} (base)", f"{label} (new)")
    slug = verdict_slug(m.verdict)
    facts = (f"{escape(m.unit)}, {direction_text(m.direction)} · base {format_number(m.base)} → new "
             f"{format_number(m.new)} · trials {m.trials[0]}/{m.trials[1]}")
    figures = "".join([
        _figure("histogram", plots.histogram_svg(m, labels), "Histogram of all samples, base vs new."),
        _figure("cdf", plots.cdf_svg(m, labels), "Empirical CDF of all samples, base vs new."),
        _figure("timeseries", plots.timeseries_svg(m, labels),
                "Per-trial time series; shaded: warm-up before the detected steady state (MSER-5)."),
    ])
    reason = f'<p class="reason">{escape(m.reason)}</p>' if m.reason else ""
    reason += "".join(f'<p class="reason warning">{escape(w)}</p>' for w in m.warnings)
    reason += f'<p class="reason design">design: {escape(m.design)}</p>' if m.design else ""
    return (
        f'<section class="metric-section" id="{section_id(report, m)}" data-metric="{escape(m.metric)}" '
        f'data-new-label="{escape(label)}" data-verdict="{slug}">'
        f'<div class="section-head"><h3>{escape(m.metric)}</h3>{_badge(m.verdict)}'
        f'<span class="facts">{facts}</span></div>'
        f'<p class="sentence">{escape(headline(report, m))}</p>{reason}'
        f"{_legend(report, m) if figures else ''}"
        f'<div class="plots">{figures}</div></section>'
    )


def _profile_html(report: ComparisonReport, growth: int = 10, shrink: int = 5) -> str:
    profile = report.profile
    if profile is None:
        return ""
    parts = ['<section id="profile"><h2>Why: profiles</h2>', f'<p class="reason">{escape(profile.note)}</p>']
    for delta in profile.deltas:
        rows = "".join(
            f'<tr data-symbol="{escape(r.symbol)}" data-kind="{r.kind}"><td class="metric">{escape(r.symbol)}'
            f'{" [k]" if r.where == "kernel" else ""}</td><td>{r.kind}</td><td class=num>{r.base_pct:.2f}</td>'
            f'<td class=num>{r.new_pct:.2f}</td>'
            f'<td class="num change {"regression" if r.change_pct > 0 else "improvement"}">{r.change_pct:+.2f}</td>'
            f"<td class=num>±{r.noise_pp:.2f}</td></tr>"
            for r in [*delta.growth(growth), *delta.shrink(shrink)]
        )
        diff = profile.diff_flames.get(delta.new_label, "")
        parts.append(
            f'<section class="metric-section profile-delta" data-new-label="{escape(delta.new_label)}">'
            f'<div class="section-head"><h3>{escape(delta.new_label)} against {escape(delta.base_label)}</h3>'
            f'<span class="facts">{escape(growth_note(delta))} · {escape(delta.event)}, {delta.base_samples} vs '
            f"{delta.new_samples} samples</span></div>"
            '<table class="profile-delta-table"><thead><tr><th>symbol</th><th>share</th><th class=num>base %</th>'
            "<th class=num>new %</th><th class=num>change (points)</th><th class=num>sampling noise</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>"
            + (f'<figure class="plot flame-diff">{diff}<figcaption>Flame graph of the new side, coloured by the '
               "change of each frame's self share (red grew, blue shrank); click a frame to zoom, Search to find "
               "one.</figcaption></figure>" if diff else "")
            + "</section>"
        )
    for label, svg in profile.flames.items():
        parts.append(f'<details><summary>flame graph of {escape(label)}</summary><figure class="plot flame-side" '
                     f'data-label="{escape(label)}">{svg}</figure></details>')
    parts.append("</section>")
    return "".join(parts)


def render(report: ComparisonReport) -> str:
    """The whole page as one string (UTF-8 when written)."""
    kind = f"{escape(report.label_kind)} " if report.label_kind else ""
    news = ", ".join(f'<span class="label new">{escape(label)}</span>' for label in report.new_labels)
    found = headlines(report)
    headline_html = (
        '<ul class="headlines">' + "".join(f"<li>{escape(h)}</li>" for h in found) + "</ul>"
        if found else '<p class="headlines">Nothing was compared.</p>'
    )
    overall_html = "".join(f'<p class="overall">{escape(sentence)}</p>' for sentence in overall_sentences(report))
    sections = "".join(_section(report, m) for m in report.metrics)
    return page(report.title, CSS, f"""<header class="report-header">
<h1>{escape(report.title)}</h1>
<p class="subtitle">base {kind}<span class="label base">{escape(report.base_label)}</span> vs new {kind}{news}
 · {escape(method_note(report))}</p>
</header>
<section id="summary">
{_cards(report)}
{overall_html}
<div id="headlines">{headline_html}</div>
<h2>All metrics</h2>
{_summary_table(report)}
</section>
{_profile_html(report)}
<h2>Changes with confidence intervals</h2>
<figure id="forest-plot" class="plot">{plots.forest_svg(report)}
<figcaption>Change of each metric (dot) and its {report.confidence:.0%} confidence interval (bar),
colored by verdict. Whether up is good depends on the metric's direction.</figcaption></figure>
<h2>Metrics</h2>
{sections}
<h2>Run context and parameters</h2>
<div class="kv">
<div><h3 class="kv-title">Machine and run</h3>{_kv_table("run-context", report.context)}</div>
<div><h3 class="kv-title">Test parameters</h3>{_kv_table("test-parameters", report.parameters)}</div>
</div>
<footer>Generated by kbench. Self-contained: inline CSS and SVG, no network; scripts only inside the
flame graphs.</footer>
""")

