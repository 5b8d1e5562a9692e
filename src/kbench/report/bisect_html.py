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

The page is ``report/templates/bisect.html`` (Jinja2, ``kbench.report.templating``) with the
comparison report's style sheet and ``bisect.css``.

The commit order is the report's ``commits`` (the shas after good up to bad, oldest
first); a report without it (or with steps not in it) is plotted in the order measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from kbench.bisect.driver import ABORTED, DONE, FAILED, NO_DIFFERENCE, RUNNING
from kbench.bisect.search import BAD, GOOD, SKIP
from kbench.report.comparison import plots
from kbench.report.comparison.common import flat_items, format_change, format_ci, p_text
from kbench.report.comparison.html import CSS_FILES as COMPARISON_CSS
from kbench.report.templating import render as render_template
from kbench.report.templating import style_sheet, trusted
from kbench.report.units import format_value

GOOD_COLOR = plots.VERDICT_COLORS["improvement"]
BAD_COLOR = plots.VERDICT_COLORS["regression"]
SKIP_COLOR = "#9ca3af"
CANDIDATE_COLOR = plots.OTHER_VERDICT_COLOR
STEP_COLORS = {GOOD: GOOD_COLOR, BAD: BAD_COLOR, SKIP: SKIP_COLOR}

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
    return str(value if value is not None else "")


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
        what = "instructions per operation" if metric == "instructions" else f"{metric} time"
        ax.set_ylabel(f"trial statistic ({what})" if metric else "trial statistic")
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
def _headline(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the headline says, by the bisection's status (``templates/bisect.html``)."""
    status = str(report.get("status") or "unknown")
    steps = report.get("steps") or []
    first_bad = report.get("first_bad")
    check = report.get("check") or {}
    if status == DONE and isinstance(first_bad, Mapping):
        return {
            "kind": "first-bad", "sha": str(first_bad.get("sha") or ""), "subject": _text(first_bad.get("subject")),
            "author": _text(first_bad.get("author")), "against": _change_against(report),
            "change": change_text(report.get("change_pct"), report.get("ci_pct"), report.get("p_value")),
            "caution": _text(report.get("reason")) if report.get("confirmed") is False else None,
        }
    if status == DONE:
        candidates = [c for c in report.get("candidates") or [] if isinstance(c, Mapping)]
        return {"kind": "candidates", "reason": _text(report.get("reason") or "skipped commits leave it ambiguous"),
                "candidates": [{"sha": _text(c.get("sha")), "short": _text(_short(c.get("sha"))),
                                "subject": _text(c.get("subject"))} for c in candidates]}
    if status == NO_DIFFERENCE:
        return {"kind": "no-difference",
                "change": change_text(check.get("change_pct"), check.get("ci_pct"), check.get("p_value"))}
    if status == FAILED:
        return {"kind": "failed", "error": _text(report.get("error"))}
    if status == RUNNING:
        return {"kind": "running", "steps": len(steps), "id": _text(report.get("id"))}
    if status == ABORTED:
        return {"kind": "aborted", "steps": len(steps)}
    return {"kind": "other"}


def _check(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    check = report.get("check") or {}
    unit = _unit(report)
    rows = []
    for side in ("good", "bad"):
        trials = _numbers(check.get(f"{side}_trials"))
        median = float(np.median(trials)) if trials else None
        spread = f"{format_value(min(trials), unit)} … {format_value(max(trials), unit)}" if trials else "–"
        rows.append({"side": side, "sha": _text(_short(report.get(side))), "trials": len(trials),
                     "median": _value(median, unit), "range": spread})
    return rows


def _console(step: Mapping[str, Any]) -> str | None:
    tail = step.get("console_tail")
    if not tail:
        return None
    return "\n".join(str(line) for line in tail) if isinstance(tail, list | tuple) else str(tail)


def _steps(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    unit = _unit(report)
    first_bad = str((report.get("first_bad") or {}).get("sha") or "")
    rows = []
    for step in report.get("steps") or []:
        sha = str(step.get("commit") or "")
        position = _number(step.get("position"))
        rows.append({
            "sha": sha, "first_bad": bool(sha) and sha == first_bad, "verdict": str(step.get("verdict") or ""),
            "phase": _text(step.get("phase")), "weak": bool(step.get("weak")),
            "recheck": step.get("phase") == "recheck",
            "subject": _text(step.get("subject")), "trials": len(_numbers(step.get("trials"))),
            "median": _value(step.get("median"), unit), "change": _pct(step.get("change_vs_good_pct")),
            "position": "–" if position is None else f"{position:.2f}", "reason": _text(step.get("reason")),
            "console": _console(step),
        })
    return rows


_ANSWER_KEYS = {"status", "check", "first_bad", "candidates", "change_pct", "ci_pct", "p_value", "error", "reason",
                "steps", "params", "evidence", "confirmed"}


def _change_against(report: Mapping[str, Any]) -> str:
    """What the quoted change compares: the first bad commit against its parent, side by side."""
    evidence = report.get("evidence")
    if not isinstance(evidence, Mapping) or not isinstance(evidence.get("parent"), Mapping):
        return "change vs good"
    rounds = len(evidence.get("parent_trials") or [])
    return f"change vs its parent {_short(evidence['parent'].get('sha'))} ({rounds} rounds side by side)"


def _parameters(report: Mapping[str, Any]) -> list[tuple[str, str]]:
    mapping: dict[str, Any] = {key: value for key, value in report.items() if key not in _ANSWER_KEYS}
    if isinstance(mapping.get("commits"), list):
        mapping["commits"] = len(mapping["commits"])
    mapping["params"] = report.get("params") or {}
    return flat_items(mapping)


def render_bisect_html(report: dict[str, Any]) -> str:
    """The whole page of one bisection report (``bisect_cmd.report_dict``) as one string."""
    title = f"kbench bisection {report.get('id', '')}: {report.get('command', '')}".strip()
    params = report.get("params") or {}
    count = _commit_count(report)
    facts = []
    if count is not None:
        facts.append(f"{count} commits")
    if params.get("metric"):
        metric = str(params.get("metric"))
        facts.append("instructions per operation" if metric == "instructions" else f"{_text(metric)} time")
    if report.get("kind"):
        facts.append(_text(report.get("kind")))
    ordered = commit_positions(report) is not None
    caption = ("Trial statistics of every measured commit (dots; bar: median), the good and bad commits of the check "
               "at the ends. Bands: interquartile ranges of the check's good (green) and bad (red) trials; dotted: "
               "the medians of the good and bad trials measured in the same batch as the commit. Hollow dots: a weak "
               "verdict. " + ("Commits are in commit order (position in the range)." if ordered else
                              "Commits are in the order measured (their commit order is not known)."))
    check = report.get("check") or {}
    status = str(report.get("status") or "unknown")
    measured = _number(check.get("change_pct")) is not None
    sentence = change_text(check.get("change_pct"), check.get("ci_pct"), check.get("p_value"))
    return render_template(
        "bisect.html", title=title, css=style_sheet(*COMPARISON_CSS, "bisect.css"),
        good=_text(_short(report.get("good"))), bad=_text(_short(report.get("bad"))), facts=facts,
        repo=_text(report.get("repo")) if report.get("repo") else None, status=status, headline=_headline(report),
        error=_text(report.get("error")) if status != FAILED and report.get("error") else None,
        check=_check(report),
        check_sentence=f"bad vs good: {sentence}" if measured else "not measured",
        evidence_svg=trusted(evidence_svg(report)), caption=caption, steps=_steps(report),
        running=report.get("status") == RUNNING, parameters=_parameters(report),
    )
