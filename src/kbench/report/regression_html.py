"""The regression report as HTML: a self-contained page (CLI) or a fragment (the dashboard).

Nothing is fetched and no script runs: each entry has an inline SVG of its series around
the change and, when its two runs counted or were profiled, the why rows under the headline
(``kbench.report.why``: ``perf-stat.*`` counters' %change, ``perf-profile.*`` shares).
Hooks for tests and styling: ``article.regression[data-series][data-run][data-verdict]``,
``svg.change-plot``, ``table.before-after``, ``table.why`` (``tr[data-row]``), ``ol.git-log``,
``pre.reproduce``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from html import escape

import numpy as np

from kbench.history.confirmed import Confirmation
from kbench.history.regressions import RegressionEntry
from kbench.report.regression_text import SUSPECTED_NOTE, counts
from kbench.report.units import format_value
from kbench.report.why import WhyRows, number_text

PLOT_CONTEXT = 60
"""Points shown on each side of the change in an entry's plot."""

PAGE_CSS = """
body { margin: 0; background: #f8fafc; color: #1f2937;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; }
main { max-width: 1100px; margin: 0 auto; padding: 24px 28px 48px; }
h1 { font-size: 24px; margin: 0 0 8px; }
"""
ENTRY_CSS = """
article.regression { background: #fff; border: 1px solid #e5e7eb; border-radius: 8px; padding: 14px 18px;
  margin: 16px 0; }
article.regression h2 { font: 600 15px ui-monospace, Menlo, Consolas, monospace; margin: 0 0 8px; }
article.regression[data-verdict="regression"] h2 { color: #c62828; }
article.regression[data-verdict="improvement"] h2 { color: #2e7d32; }
article.regression[data-status="suspected"] h2 { color: #92400e; }
span.status { font: 600 12px system-ui, sans-serif; padding: 1px 7px; border-radius: 9px; margin-right: 6px; }
span.status.confirmed { background: #fee2e2; color: #991b1b; }
span.status.suspected { background: #fef3c7; color: #92400e; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 8px 0; }
dl.facts dt { color: #6b7280; } dl.facts dd { margin: 0; }
table.before-after { border-collapse: collapse; margin: 8px 0; font-variant-numeric: tabular-nums; }
table.before-after th, table.before-after td { padding: 3px 12px; border-bottom: 1px solid #e5e7eb;
  text-align: right; }
table.before-after td.metric { text-align: left; font-family: ui-monospace, Menlo, monospace; }
table.why { border-collapse: collapse; margin: 4px 0 8px; font-variant-numeric: tabular-nums; font-size: 13px; }
table.why th, table.why td { padding: 2px 12px; border-bottom: 1px solid #f1f5f9; text-align: right; }
table.why td.name { text-align: left; font-family: ui-monospace, Menlo, monospace; }
table.why tr.grew td.change { color: #c62828; } table.why tr.shrank td.change { color: #2e7d32; }
pre.reproduce { background: #0f172a; color: #e2e8f0; padding: 10px 14px; border-radius: 6px; overflow-x: auto; }
ol.git-log { font-family: ui-monospace, Menlo, monospace; font-size: 12.5px; }
svg.change-plot { background: #fff; border: 1px solid #e5e7eb; border-radius: 6px; }
.muted { color: #6b7280; }
"""

Link = Callable[[str, int | None], str]
"""(series id, run id or None) → URL; the dashboard links entries to its pages."""


def render_page(entries: Sequence[RegressionEntry], scope: str, unmatched: Sequence[Confirmation] = (),
                why: Mapping[int, WhyRows] | None = None) -> str:
    from kbench.report.comparison.html import page

    return page("kbench regression report", PAGE_CSS + ENTRY_CSS,
                fragment(entries, scope, unmatched=unmatched, why=why))


def fragment(entries: Sequence[RegressionEntry], scope: str, link: Link | None = None,
             unmatched: Sequence[Confirmation] = (), why: Mapping[int, WhyRows] | None = None) -> str:
    """The confirmations a watch made that no change point shows, then the entries; ``why``: the
    entries' why rows by the run after the change (``entry_why_rows``)."""
    head = (f"<h1>kbench regression report</h1>\n<p class=\"scope\">{escape(counts(entries, unmatched))} "
            f"{escape(scope)}.</p>")
    return head + "\n" + "\n".join([
        *(_confirmation(c) for c in unmatched),
        *(_entry(e, link, (why or {}).get(e.point.correlated.after.run_id)) for e in entries),
    ])


def _confirmation(confirmation: Confirmation) -> str:
    facts = [("due to commit", f"<code>{escape(confirmation.culprit)}</code> {escape(confirmation.subject)}"),
             ("confirmed", escape(confirmation.describe())), ("status", escape(confirmation.status_text)),
             ("parameters", escape(" ".join(f"{k}={v}" for k, v in confirmation.params.items()) or "-")),
             ("found by", escape(f"kbench watch {confirmation.watch_id} on {confirmation.branch}, finding "
                                 f"{confirmation.finding_id}"))]
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in facts)
    subject = (f"[kbench] [{confirmation.benchmark}] {confirmation.culprit[:10]}: {confirmation.metric} "
               f"{confirmation.change_pct:+.1f}% regression")
    return (f'<article class="regression" data-status="confirmed" data-verdict="regression" '
            f'data-culprit="{escape(confirmation.culprit)}">\n<h2><span class="status confirmed">confirmed</span>'
            f'{escape(subject)}</h2>\n<dl class="facts">{rows}</dl>\n</article>')


def why_table(rows: WhyRows | None) -> str:
    """The why rows as ``table.why``: base, %change (points for profile shares), new, the row's name."""
    if rows is None or rows.empty:
        return ""
    body = []
    for counter in rows.counters:
        change = counter.change_pct
        trend = "" if not math.isfinite(change) or change == 0 else (" grew" if change > 0 else " shrank")
        shown = f"{change:+.1f}%" if math.isfinite(change) else ""
        body.append(f'<tr class="counter{trend}" data-row="perf-stat.{escape(counter.name)}">'
                    f"<td>{escape(number_text(counter.base))}</td><td class=\"change\">{shown}</td>"
                    f"<td>{escape(number_text(counter.new))}</td>"
                    f'<td class="name">perf-stat.{escape(counter.name)} <span class="muted">({escape(counter.unit)})'
                    "</span></td></tr>")
    for row in rows.profile_rows():
        trend = " grew" if row.change_pct > 0 else " shrank" if row.change_pct < 0 else ""
        noise = ' <span class="muted" title="within sampling noise">~</span>' if row.within_noise else ""
        name = f"perf-profile.{row.kind}.{row.symbol}"
        body.append(f'<tr class="profile{trend}" data-row="{escape(name)}"><td>{row.base_pct:.2f}%</td>'
                    f'<td class="change">{row.change_pct:+.2f}p</td><td>{row.new_pct:.2f}%</td>'
                    f'<td class="name">{escape(name)}{noise}</td></tr>')
    note = ""
    if rows.delta is not None:
        note = (f'<p class="muted">perf-profile: % of {escape(rows.delta.event)} samples, change in points (p), '
                f"~ within sampling noise; {rows.delta.base_samples} vs {rows.delta.new_samples} samples.</p>")
    return ('<table class="why"><tr><th>run ' f"{rows.base_run}</th><th>%change</th><th>run {rows.new_run}</th>"
            "<th>why</th></tr>" + "".join(body) + "</table>" + note)


def _entry(entry: RegressionEntry, link: Link | None, why: WhyRows | None = None) -> str:
    s, point = entry.series, entry.point
    c, correlated = point.change, point.correlated
    series_name = escape(s.id)
    if link:
        series_name = f'<a href="{escape(link(s.id, None))}">{series_name}</a>'
    facts = [
        ("testcase", f"<code>{escape(s.benchmark)}</code>"),
        ("parameters", escape(s.describe_params())),
        ("test machine", f"{escape(entry.machine.describe())} (target: {escape(s.target)})"),
        ("series", series_name),
    ]
    if entry.confirmation is not None:
        facts[:0] = [("due to commit", f"<code>{escape(entry.confirmation.culprit)}</code> "
                                        f"{escape(entry.confirmation.subject)}"),
                     ("confirmed", escape(entry.confirmation.describe())),
                     ("status", escape(entry.confirmation.status_text))]
    else:
        facts[:0] = [("suspected", escape(SUSPECTED_NOTE))]
    for name, version in (("last run before", correlated.before), ("first run after", correlated.after)):
        run = f"run {version.run_id}"
        if link:
            run = f'<a href="{escape(link(s.id, version.run_id))}">{run}</a>'
        parts = [run, f"{version.started_at:%Y-%m-%d %H:%M} UTC"]
        if version.commit:
            parts.insert(0, f"commit <code>{escape(version.commit[:12])}</code>")
        if version.kernel:
            parts.append(f"kernel {escape(version.kernel)}")
        if version.label:
            parts.append(f"label {escape(version.label)}")
        facts.append((name, ", ".join(parts)))
    rows = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in facts)
    table = (
        '<table class="before-after"><tr><th>before</th><th>%change</th><th>after</th><th></th><th>p</th></tr>'
        f"<tr><td>{escape(format_value(c.before.median, s.unit))} ± {c.before.stdev_pct:.1f}%"
        f' <span class="muted">({c.before.n} runs)</span></td>'
        f"<td>{c.change_pct:+.1f}%</td>"
        f"<td>{escape(format_value(c.after.median, s.unit))} ± {c.after.stdev_pct:.1f}%"
        f' <span class="muted">({c.after.n} runs)</span></td>'
        f'<td class="metric">{escape(s.metric)}</td><td>{c.p_value:.2g}</td></tr></table>'
    )
    log = ""
    if correlated.git_log is not None:
        items = "".join(
            f"<li><code>{escape(g.id[:12])}</code> {escape(g.subject)} "
            f'<span class="muted">{escape(g.author)}, {escape(g.date[:10])}</span></li>'
            for g in correlated.git_log
        )
        log = (f"<h3>correlated commits <code>{escape(correlated.commit_range or '')}</code></h3>"
               f'<ol class="git-log">{items}</ol>')
    elif correlated.git_error:
        log = f'<p class="muted">correlated commits: {escape(correlated.git_error)}</p>'
    reproduce = escape("\n".join(entry.reproduce))
    return (
        f'<article class="regression" data-series="{escape(s.id)}" data-run="{point.run_id}" '
        f'data-verdict="{escape(point.verdict)}" data-status="{entry.status}">\n'
        f'<h2><span class="status {entry.status}">{entry.status}</span>{escape(entry.subject)}</h2>\n'
        f'<dl class="facts">{rows}</dl>\n{table}\n{why_table(why)}\n{_plot(entry)}\n{log}\n'
        f'<h3>To reproduce</h3><pre class="reproduce">{reproduce}</pre>\n</article>'
    )


def _plot(entry: RegressionEntry, width: int = 640, height: int = 160) -> str:
    """The series' points around the change, the segment medians, the change marked."""
    s, c = entry.series, entry.point.change
    start = max(0, c.index - PLOT_CONTEXT)
    stop = min(len(s.points), c.index + PLOT_CONTEXT)
    values = s.values()[start:stop]
    if values.size < 2:
        return ""
    pad = 8
    low, high = float(values.min()), float(values.max())
    span = (high - low) or abs(high) or 1.0

    def x(i: int) -> float:
        return pad + (width - 2 * pad) * (i - start) / max(stop - start - 1, 1)

    def y(v: float) -> float:
        return height - pad - (height - 2 * pad) * (v - low) / span

    dots = "".join(
        f'<circle cx="{x(start + i):.1f}" cy="{y(float(v)):.1f}" r="2.2" '
        f'fill="{"#e07a1f" if start + i >= c.index else "#3b6ea8"}"/>'
        for i, v in enumerate(values)
    )
    cut = x(c.index) - (x(c.index) - x(c.index - 1)) / 2
    levels = (
        f'<line x1="{pad}" x2="{cut:.1f}" y1="{y(c.before.median):.1f}" y2="{y(c.before.median):.1f}" '
        'stroke="#3b6ea8" stroke-dasharray="4 3"/>'
        f'<line x1="{cut:.1f}" x2="{width - pad}" y1="{y(c.after.median):.1f}" y2="{y(c.after.median):.1f}" '
        'stroke="#e07a1f" stroke-dasharray="4 3"/>'
    )
    label = escape(f"{format_value(float(np.min(values)), s.unit)} … {format_value(float(np.max(values)), s.unit)}")
    return (
        f'<svg class="change-plot" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(s.metric)} around run {entry.point.run_id}">'
        f'<line x1="{cut:.1f}" x2="{cut:.1f}" y1="0" y2="{height}" stroke="#c62828"/>{levels}{dots}'
        f'<text x="{width - pad}" y="12" text-anchor="end" font-size="10" fill="#6b7280">{label}</text></svg>'
    )
