"""The HTML page of a bisection: one self-contained file, inline CSS and SVG, no script.

Input: the JSON-friendly dict of ``kbench.cli.bisect_cmd.report_dict``; keys the page does
not know are shown in the parameters table, missing optional keys are tolerated. The look
is the comparison report's (its CSS and its matplotlib helpers are reused).

Stable hooks for tests and for users' own styling:

- ``#headline`` (``data-status``: running, done, no-difference, failed, aborted) with the
  0-Day style answer; inside it ``#first-bad`` (``data-sha``) when one commit is named, or
  ``#candidates`` (one ``li[data-sha]`` each) when skipped commits leave it ambiguous;
- ``#check``: the initial good vs bad measurement;
- ``#evidence-plot``: a ``figure`` holding ``svg.evidence-svg`` (every measured commit's
  trials in commit order between the good and bad reference bands) when anything was
  measured;
- ``#steps-table`` with one ``tr.step-row`` per step (``data-verdict`` good/bad/skip,
  ``data-commit`` the full sha, ``data-phase``, ``data-weak``); the rows of the first bad
  commit also carry the class ``first-bad``;
- ``#parameters``: the bisection's settings and every other top-level key.

The commit order is the report's ``commits`` (the shas after good up to bad, oldest
first); a report without it (or with steps not in it) is plotted in the order measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from kbench.bisect.driver import ABORTED, DONE, FAILED, NO_DIFFERENCE, RUNNING
from kbench.bisect.search import BAD, GOOD, SKIP
from kbench.report.comparison import plots
from kbench.report.comparison.common import format_change, format_ci, p_text
from kbench.report.comparison.html import CSS as COMPARISON_CSS
from kbench.report.comparison.html import _kv_table, page
from kbench.report.units import format_value

GOOD_COLOR = plots.VERDICT_COLORS["improvement"]
BAD_COLOR = plots.VERDICT_COLORS["regression"]
SKIP_COLOR = "#9ca3af"
CANDIDATE_COLOR = plots.OTHER_VERDICT_COLOR
STEP_COLORS = {GOOD: GOOD_COLOR, BAD: BAD_COLOR, SKIP: SKIP_COLOR}

CSS = COMPARISON_CSS + """
:root { --good: var(--improvement); --bad: var(--regression); --skip: #9ca3af; }
section.headline { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 14px 18px; margin: 8px 0 16px; border-left: 6px solid var(--no-change); }
section.headline[data-status="done"] { border-left-color: var(--bad); }
section.headline[data-status="failed"], section.headline[data-status="aborted"] { border-left-color: var(--other); }
.answer { font-size: 18px; font-weight: 700; margin: 0 0 6px; }
.answer code, .sha { font-family: ui-monospace, Menlo, Consolas, monospace; }
.answer code { color: var(--bad); }
.facts { color: var(--muted); margin: 2px 0; }
.change-line { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; margin: 4px 0 0; }
ul.candidates { margin: 6px 0; padding-left: 18px; font-family: ui-monospace, Menlo, Consolas, monospace; }
.badge.good { background: var(--good); } .badge.bad { background: var(--bad); }
.badge.skip { background: #e5e7eb; color: #374151; }
.badge.status-done { background: var(--bad); } .badge.status-no-difference { background: var(--no-change); }
.badge.status-running { background: var(--base); }
.mark { display: inline-block; margin-left: 4px; padding: 0 6px; border-radius: 999px; font-size: 11px;
  border: 1px solid var(--line); color: #374151; white-space: nowrap; }
.mark.weak { border-style: dashed; border-color: var(--other); color: var(--other); }
tr.step-row.first-bad td { background: #fdecea; }
td.sha { font-size: 12.5px; white-space: nowrap; }
td.subject { max-width: 340px; overflow-wrap: anywhere; }
td.reason { color: #374151; font-size: 12.5px; }
details pre { white-space: pre-wrap; font-size: 11.5px; margin: 4px 0 0; max-height: 240px; overflow: auto; }
figure.plot p.empty { color: var(--muted); margin: 10px; }
"""


# -- small value helpers (the report's numbers may be None after JSON's NaN cleaning) ----------------
def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _numbers(values: Any) -> list[float]:
    if not isinstance(values, Sequence) or isinstance(values, str):
        return []
    return [x for x in (_number(v) for v in values) if x is not None]


def _pct(value: Any) -> str:
    number = _number(value)
    return "–" if number is None else format_change(number)


def _interval(value: Any) -> tuple[float, float] | None:
    bounds = _numbers(value)
    return (bounds[0], bounds[1]) if len(bounds) == 2 else None


def change_text(change: Any, ci: Any, p_value: Any) -> str:
    """``+5.0% (CI +4.1…+5.9%, p=0.0002)``, leaving out what is missing."""
    details = []
    interval = _interval(ci)
    if interval is not None:
        details.append(f"CI {format_ci(interval)}")
    p = _number(p_value)
    if p is not None:
        details.append(p_text(p))
    return _pct(change) + (f" ({', '.join(details)})" if details else "")


def _unit(report: Mapping[str, Any]) -> str:
    return str(report.get("unit") or "ns")


def _value(value: Any, unit: str) -> str:
    number = _number(value)
    return "–" if number is None else format_value(number, unit)


def _short(sha: Any) -> str:
    return str(sha or "")[:12]


def _text(value: Any) -> str:
    return escape(str(value if value is not None else ""))


# -- the commit order -------------------------------------------------------------------------------
def commit_positions(report: Mapping[str, Any]) -> dict[str, int] | None:
    """Where each stepped commit lies in the range (1..N, the bad commit is N), or None when unknown."""
    steps = list(report.get("steps") or [])
    commits = report.get("commits")
    if isinstance(commits, list):
        index = {str(sha): number for number, sha in enumerate(commits, 1)}
        found = {str(step.get("commit")): index.get(str(step.get("commit"))) for step in steps}
        return None if None in found.values() else {k: v for k, v in found.items() if v is not None}
    return None


def _commit_count(report: Mapping[str, Any]) -> int | None:
    commits = report.get("commits")
    return len(commits) if isinstance(commits, list) else None


# -- the plot ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Column:
    label: str
    sha: str
    trials: list[float]
    verdict: str  # good, bad, skip
    weak: bool = False
    reference: bool = False  # the good or bad commit itself (the check's trials)
    refs: tuple[list[float], list[float]] | None = None  # the batch's good and bad trials


def _columns(report: Mapping[str, Any]) -> tuple[list[_Column], bool]:
    """G, the stepped commits (latest step each) in commit order, B; and whether that order is known."""
    latest: dict[str, Mapping[str, Any]] = {}
    for step in report.get("steps") or []:
        latest[str(step.get("commit"))] = step
    positions = commit_positions(report)
    count = _commit_count(report)
    order = sorted(latest, key=lambda sha: positions[sha]) if positions is not None else list(latest)
    check = report.get("check") or {}
    good, bad = str(report.get("good") or ""), str(report.get("bad") or "")
    columns = [_Column(f"good\n{good[:7]}", good, _numbers(check.get("good_trials")), GOOD, reference=True)]
    for number, sha in enumerate(order, 1):
        step = latest[sha]
        refs = step.get("refs")
        pair = (_numbers(refs[0]), _numbers(refs[1])) if isinstance(refs, Sequence) and len(refs) == 2 else None
        where = f"{positions[sha]}/{count}" if positions is not None else f"#{number}"
        verdict = str(step.get("verdict"))
        columns.append(_Column(f"{sha[:7]}\n{where}", sha, _numbers(step.get("trials")), verdict,
                               weak=bool(step.get("weak")), refs=pair))
    columns.append(_Column(f"bad\n{bad[:7]}", bad, _numbers(check.get("bad_trials")), BAD, reference=True))
    return columns, positions is not None


def _band(ax: Any, values: Sequence[float], color: str) -> None:
    if not values:
        return
    low, median, high = np.percentile(np.asarray(values, dtype=float), [25, 50, 75]).tolist()
    ax.axhspan(low, high, color=color, alpha=0.10, linewidth=0)
    ax.axhline(median, color=color, linestyle="--", linewidth=0.9, alpha=0.8)


def evidence_svg(report: Mapping[str, Any]) -> str | None:
    """Every commit's trials along the commit order, with the check's good and bad bands; None if none."""
    columns, ordered = _columns(report)
    if not any(column.trials for column in columns):
        return None
    unit = _unit(report)
    check = report.get("check") or {}
    first_bad = str((report.get("first_bad") or {}).get("sha") or "")
    candidates = {str(c.get("sha")) for c in report.get("candidates") or [] if isinstance(c, Mapping)}
    with plots._figure(11.2, 3.8) as fig:
        ax = fig.add_subplot()
        ax.grid(axis="x", visible=False)
        _band(ax, _numbers(check.get("good_trials")), GOOD_COLOR)
        _band(ax, _numbers(check.get("bad_trials")), BAD_COLOR)
        for x, column in enumerate(columns):
            color = STEP_COLORS.get(column.verdict, CANDIDATE_COLOR)
            if column.verdict == SKIP:
                ax.axvspan(x - 0.4, x + 0.4, color=SKIP_COLOR, alpha=0.18, linewidth=0, hatch="//")
            if not column.reference and column.sha in candidates and not first_bad:
                ax.axvspan(x - 0.45, x + 0.45, color=CANDIDATE_COLOR, alpha=0.12, linewidth=0)
            if column.refs is not None:
                for values, ref_color in zip(column.refs, (GOOD_COLOR, BAD_COLOR), strict=True):
                    if values:
                        level = float(np.median(values))
                        ax.plot([x - 0.32, x + 0.32], [level, level], color=ref_color, linewidth=1.1, linestyle=":")
            if not column.trials:
                continue
            spread = np.linspace(-0.2, 0.2, len(column.trials)) if len(column.trials) > 1 else np.zeros(1)
            ax.scatter(x + spread, column.trials, s=14, zorder=3, linewidths=1.0, edgecolors=color,
                       facecolors="white" if column.weak else color, alpha=0.45 if column.reference else 0.85)
            median = float(np.median(column.trials))
            ax.plot([x - 0.3, x + 0.3], [median, median], color=color, linewidth=2.4, zorder=4,
                    solid_capstyle="butt")
        if first_bad and ordered:
            index = next((i for i, c in enumerate(columns) if c.sha == first_bad and not c.reference),
                         len(columns) - 1)
            ax.axvline(index - 0.5, color="#374151", linewidth=1.0, linestyle="--")
            ax.annotate("first bad", (index - 0.5, 1.0), xycoords=("data", "axes fraction"), xytext=(3, -10),
                        textcoords="offset points", fontsize=7.5, color="#374151")
        ax.set_xticks(range(len(columns)), [c.label.replace("$", r"\$") for c in columns],  # no mathtext
                      rotation=0 if len(columns) <= 14 else 90, fontsize=7.5)
        ax.set_xlim(-0.6, len(columns) - 0.4)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: format_value(value, unit)))
        metric = (report.get("params") or {}).get("metric")
        ax.set_ylabel(f"trial statistic ({metric} time)" if metric else "trial statistic")
        ax.set_xlabel("commit (position in the range good → bad)" if ordered else "commit (in the order measured)")
        handles = [
            Line2D([], [], color=GOOD_COLOR, marker="o", linestyle="none", label="good"),
            Line2D([], [], color=BAD_COLOR, marker="o", linestyle="none", label="bad"),
            Patch(facecolor=GOOD_COLOR, alpha=0.2, label="good commit, check IQR"),
            Patch(facecolor=BAD_COLOR, alpha=0.2, label="bad commit, check IQR"),
        ]
        if any(column.weak for column in columns):
            handles.append(Line2D([], [], color="#374151", marker="o", markerfacecolor="white", linestyle="none",
                                  label="weak"))
        if any(column.verdict == SKIP for column in columns):
            handles.append(Patch(facecolor=SKIP_COLOR, alpha=0.35, hatch="//", label="skip (build failed)"))
        if any(column.refs for column in columns):
            handles.append(Line2D([], [], color="#6b7280", linestyle=":", label="same batch's good/bad medians"))
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=len(handles), borderaxespad=0.2)
        return plots._svg(fig, "plot-svg evidence-svg")


# -- the page ---------------------------------------------------------------------------------------
def _headline(report: Mapping[str, Any]) -> str:
    status = str(report.get("status") or "unknown")
    steps = report.get("steps") or []
    first_bad = report.get("first_bad")
    check = report.get("check") or {}
    parts: list[str] = []
    if status == DONE and isinstance(first_bad, Mapping):
        sha = str(first_bad.get("sha") or "")
        parts.append(
            f'<div id="first-bad" data-sha="{escape(sha)}">'
            f'<p class="answer">first bad commit: <code title="{escape(sha)}">{escape(sha[:12])}</code> '
            f'<span class="subject">{_text(first_bad.get("subject"))}</span></p>'
            f'<p class="facts">author: {_text(first_bad.get("author"))} · full sha <span class="sha">'
            f"{escape(sha)}</span></p>"
            f'<p class="change-line">{escape(_change_against(report))}: '
            f'{escape(change_text(report.get("change_pct"), report.get("ci_pct"), report.get("p_value")))}</p>'
            + (f'<p class="facts caution">{_text(report.get("reason"))}</p>' if report.get("confirmed") is False
               else "")
            + "</div>"
        )
    elif status == DONE:
        candidates = [c for c in report.get("candidates") or [] if isinstance(c, Mapping)]
        items = "".join(f'<li data-sha="{_text(c.get("sha"))}">{_text(_short(c.get("sha")))} '
                        f'{_text(c.get("subject"))}</li>' for c in candidates)
        parts.append(f'<p class="answer">the first bad commit is one of {len(candidates)} commits</p>'
                     f'<p class="facts">{_text(report.get("reason") or "skipped commits leave it ambiguous")}</p>'
                     f'<ul id="candidates" class="candidates">{items}</ul>')
    elif status == NO_DIFFERENCE:
        parts.append('<p class="answer">no reproducible difference between good and bad: nothing to bisect</p>'
                     f'<p class="change-line">bad vs good: '
                     f'{escape(change_text(check.get("change_pct"), check.get("ci_pct"), check.get("p_value")))}</p>')
    elif status == FAILED:
        parts.append(f'<p class="answer">bisection failed</p><p class="error">{_text(report.get("error"))}</p>')
    elif status == RUNNING:
        parts.append(f'<p class="answer">still running (or interrupted) after {len(steps)} steps</p>'
                     f'<p class="facts"><code>kbench bisect resume {_text(report.get("id"))}</code> continues it</p>')
    elif status == ABORTED:
        parts.append(f'<p class="answer">aborted after {len(steps)} steps</p>')
    else:
        parts.append(f'<p class="answer">status {escape(status)}</p>')
    if status != FAILED and report.get("error"):
        parts.append(f'<p class="error">error: {_text(report.get("error"))}</p>')
    return (f'<section id="headline" class="headline" data-status="{escape(status)}">'
            f'<span class="badge status-{escape(status)}">{escape(status)}</span>{"".join(parts)}</section>')


def _check(report: Mapping[str, Any]) -> str:
    check = report.get("check") or {}
    unit = _unit(report)
    rows = []
    for side in ("good", "bad"):
        trials = _numbers(check.get(f"{side}_trials"))
        median = float(np.median(trials)) if trials else None
        spread = f"{format_value(min(trials), unit)} … {format_value(max(trials), unit)}" if trials else "–"
        rows.append(f'<tr data-side="{side}"><td><span class="badge {side}">{side}</span></td>'
                    f'<td class="sha">{_text(_short(report.get(side)))}</td><td class="num">{len(trials)}</td>'
                    f'<td class="num">{_value(median, unit)}</td><td class="num">{escape(spread)}</td></tr>')
    sentence = ("bad vs good: " + change_text(check.get("change_pct"), check.get("ci_pct"), check.get("p_value"))
                if _number(check.get("change_pct")) is not None else "not measured")
    return ('<table id="check"><thead><tr><th>reference</th><th>commit</th><th class="num">trials</th>'
            '<th class="num">median</th><th class="num">range</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table><p class="sentence">{escape(sentence)}</p>')


def _console(step: Mapping[str, Any]) -> str:
    tail = step.get("console_tail")
    if not tail:
        return ""
    text = "\n".join(str(line) for line in tail) if isinstance(tail, list | tuple) else str(tail)
    return f"<details><summary>output</summary><pre>{escape(text)}</pre></details>"


def _steps_table(report: Mapping[str, Any]) -> str:
    unit = _unit(report)
    first_bad = str((report.get("first_bad") or {}).get("sha") or "")
    rows = []
    for number, step in enumerate(report.get("steps") or [], 1):
        sha, verdict = str(step.get("commit") or ""), str(step.get("verdict") or "")
        marks = ('<span class="mark weak">weak</span>' if step.get("weak") else "") + (
            '<span class="mark recheck">confirm</span>' if step.get("phase") == "recheck" else "")
        position = _number(step.get("position"))
        classes = "step-row" + (" first-bad" if sha and sha == first_bad else "")
        rows.append(
            f'<tr class="{classes}" data-verdict="{escape(verdict)}" data-commit="{escape(sha)}" '
            f'data-phase="{_text(step.get("phase"))}" data-weak="{"true" if step.get("weak") else "false"}">'
            f'<td class="num">{number}</td><td class="sha" title="{escape(sha)}">{escape(sha[:12])}</td>'
            f'<td class="subject">{_text(step.get("subject"))}</td><td>{_text(step.get("phase"))}</td>'
            f'<td class="num">{len(_numbers(step.get("trials")))}</td>'
            f'<td class="num">{_value(step.get("median"), unit)}</td>'
            f'<td class="num">{escape(_pct(step.get("change_vs_good_pct")))}</td>'
            f'<td class="num">{"–" if position is None else f"{position:.2f}"}</td>'
            f'<td><span class="badge {escape(verdict)}">{escape(verdict)}</span>{marks}</td>'
            f'<td class="reason">{_text(step.get("reason"))}{_console(step)}</td></tr>'
        )
    if not rows:
        rows.append(f'<tr><td colspan="10">no steps{" yet" if report.get("status") == RUNNING else ""}</td></tr>')
    return ('<table id="steps-table"><thead><tr><th class="num">#</th><th>commit</th><th>subject</th><th>phase</th>'
            '<th class="num">trials</th><th class="num">median</th><th class="num">vs good</th>'
            '<th class="num" title="where the median lies: 0 at good, 1 at bad (log scale)">G→B</th>'
            f'<th>verdict</th><th>reason</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')


_ANSWER_KEYS = {"status", "check", "first_bad", "candidates", "change_pct", "ci_pct", "p_value", "error", "reason",
                "steps", "params", "evidence", "confirmed"}


def _change_against(report: Mapping[str, Any]) -> str:
    """What the quoted change compares: the first bad commit against its parent, side by side."""
    evidence = report.get("evidence")
    if not isinstance(evidence, Mapping) or not isinstance(evidence.get("parent"), Mapping):
        return "change vs good"
    rounds = len(evidence.get("parent_trials") or [])
    return f"change vs its parent {_short(evidence['parent'].get('sha'))} ({rounds} rounds side by side)"


def _parameters(report: Mapping[str, Any]) -> str:
    mapping: dict[str, Any] = {key: value for key, value in report.items() if key not in _ANSWER_KEYS}
    if isinstance(mapping.get("commits"), list):
        mapping["commits"] = len(mapping["commits"])
    mapping["params"] = report.get("params") or {}
    return _kv_table("parameters", mapping)


def render_bisect_html(report: dict[str, Any]) -> str:
    """The whole page of one bisection report (``bisect_cmd.report_dict``) as one string."""
    title = f"kbench bisection {report.get('id', '')}: {report.get('command', '')}".strip()
    params = report.get("params") or {}
    count = _commit_count(report)
    facts = [f"good <span class=\"label base\">{_text(_short(report.get('good')))}</span> → bad "
             f"<span class=\"label new\">{_text(_short(report.get('bad')))}</span>"]
    if count is not None:
        facts.append(f"{count} commits")
    if params.get("metric"):
        facts.append(f"{_text(params.get('metric'))} time")
    if report.get("kind"):
        facts.append(_text(report.get("kind")))
    if report.get("repo"):
        facts.append(f"repo <span class=\"sha\">{_text(report.get('repo'))}</span>")
    svg = evidence_svg(report)
    ordered = commit_positions(report) is not None
    caption = ("Trial statistics of every measured commit (dots; bar: median), the good and bad commits of the check "
               "at the ends. Bands: interquartile ranges of the check's good (green) and bad (red) trials; dotted: "
               "the medians of the good and bad trials measured in the same batch as the commit. Hollow dots: a weak "
               "verdict. " + ("Commits are in commit order (position in the range)." if ordered else
                              "Commits are in the order measured (their commit order is not known)."))
    figure = (f'<figure id="evidence-plot" class="plot">{svg}<figcaption>{escape(caption)}</figcaption></figure>'
              if svg is not None else
              '<figure id="evidence-plot" class="plot"><p class="empty">nothing measured</p></figure>')
    return page(title, CSS, f"""<header class="report-header">
<h1>{escape(title)}</h1>
<p class="subtitle">{" · ".join(facts)}</p>
</header>
{_headline(report)}
<h2>Check: good vs bad</h2>
{_check(report)}
<h2>Evidence</h2>
{figure}
<h2>Steps</h2>
{_steps_table(report)}
<h2>Parameters</h2>
{_parameters(report)}
<footer>Generated by kbench. Self-contained: inline CSS and SVG, no scripts, no network.</footer>
""")

