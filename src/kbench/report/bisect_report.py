"""A bisection as a report: the JSON-friendly dict (``report_dict``) and its text rendering.

The dict is what ``kbench bisect ... --json`` prints and what the HTML page
(``kbench.report.bisect_html``) renders: status, the check of good vs bad, ``first_bad``
(sha, subject, author) with ``change_pct``, ``ci_pct`` and ``p_value`` of the first bad
commit against its parent, and the per-step evidence (``steps``).
"""

from __future__ import annotations

import math
from typing import Any

from kbench.bisect.driver import DONE, FAILED, NO_DIFFERENCE, RUNNING
from kbench.contract.quantities import format_ns


def _clean(value: Any) -> Any:
    """NaN → None, recursively (JSON has no NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def report_dict(record: dict[str, Any]) -> dict[str, Any]:
    result = record["result"] or {}
    refs = record["refs"] or {}
    report: dict[str, Any] = _clean({
        "id": record["id"], "status": record["status"], "repo": record["repo"], "good": record["good"],
        "bad": record["bad"], "command": record["command"], "build": record["build"],
        "params": {k: v for k, v in record["params"].items() if k != "commits"},
        "commits": list(record["params"]["commits"]),
        "check": {"good_trials": refs.get("good"), "bad_trials": refs.get("bad"),
                  "change_pct": refs.get("change_pct"), "ci_pct": refs.get("ci_pct"), "p_value": refs.get("p_value")},
        "first_bad": result.get("first_bad"), "suspect": result.get("suspect"), "candidates": result.get("candidates"),
        "change_pct": result.get("change_pct"), "ci_pct": result.get("ci_pct"), "p_value": result.get("p_value"),
        "confirmed": result.get("confirmed"), "evidence": result.get("evidence"),
        "error": result.get("error"), "reason": result.get("reason"),
        "steps": record["steps"],
        "created_at": str(record["created_at"]), "updated_at": str(record["updated_at"]),
    })
    if report["params"].get("metric") == COUNTED:  # trial statistics are counts per operation, not ns
        report["unit"] = COUNTED
    return report


COUNTED = "instructions"


def _what(report: dict[str, Any]) -> str:
    """What the trial statistics are: ``wall time``, ``cpu time`` or ``instructions per operation``."""
    metric = report["params"].get("metric", "wall")
    return "instructions per operation" if metric == COUNTED else f"{metric} time"


def _median_text(median: float, report: dict[str, Any]) -> str:
    return f"{median:.6g}" if report.get("unit") == COUNTED else format_ns(median)


def _fmt_pct(value: Any) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def render_text(report: dict[str, Any]) -> str:
    lines = [f"bisection {report['id']} [{report['status']}]: {report['command']} ({_what(report)})",
             f"  repo {report['repo']}  good {report['good'][:12]}  bad {report['bad'][:12]}  "
             f"({len(report['commits'])} commits)"]
    check = report["check"]
    if check["change_pct"] is not None:
        low, high = check["ci_pct"] or (None, None)
        lines.append(f"  check: bad vs good {_fmt_pct(check['change_pct'])} CI [{_fmt_pct(low)}, {_fmt_pct(high)}] "
                     f"p={check['p_value']:.3g} ({len(check['good_trials'])}+{len(check['bad_trials'])} trials)")
    if report["steps"]:
        lines.append("")
        median_head = "median"
        lines.append(f"  {'#':>3}  {'commit':12}  {'subject':32}  {'trials':>6}  {median_head:>10}  "
                     f"{'vs good':>8}  {'verdict':14}")
        for number, step in enumerate(report["steps"], 1):
            median = step["median"]
            verdict = step["verdict"] + (" (weak)" if step.get("weak") else "")
            verdict += " (confirm)" if step.get("phase") == "recheck" else ""
            lines.append(
                f"  {number:>3}  {step['commit'][:12]:12}  {step['subject'][:32]:32}  {len(step['trials']):>6}  "
                f"{'-' if median is None else _median_text(median, report):>10}  "
                f"{_fmt_pct(step['change_vs_good_pct']):>8}  "
                f"{verdict}"
            )
    lines.append("")
    status = report["status"]
    if status == NO_DIFFERENCE:
        lines.append("no reproducible difference between G and B: nothing to bisect")
    elif status == DONE and report["first_bad"]:
        culprit = report["first_bad"]
        low, high = report["ci_pct"] or (None, None)
        p_value = report["p_value"]
        lines.append(f"first bad commit: {culprit['sha']}")
        lines.append(f"  {culprit['subject']}")
        lines.append(f"  author: {culprit['author']}")
        evidence = report.get("evidence") or {}
        parent = (evidence.get("parent") or {}).get("sha", report["good"])
        rounds = len(evidence.get("parent_trials") or [])
        lines.append(f"  change vs its parent {parent[:12]}: {_fmt_pct(report['change_pct'])} "
                     f"CI [{_fmt_pct(low)}, {_fmt_pct(high)}] p={'-' if p_value is None else f'{p_value:.3g}'}"
                     + (f" ({rounds} rounds side by side)" if rounds else ""))
    elif status == DONE and report.get("suspect"):
        suspect = report["suspect"]
        low, high = report["ci_pct"] or (None, None)
        p_value = report["p_value"]
        lines.append(report.get("reason") or "no culprit: the candidate was not confirmed")
        lines.append(f"  unconfirmed candidate: {suspect['sha']} {suspect['subject']}")
        lines.append(f"  measured against its parent: {_fmt_pct(report['change_pct'])} "
                     f"CI [{_fmt_pct(low)}, {_fmt_pct(high)}] p={'-' if p_value is None else f'{p_value:.3g}'}")
    elif status == DONE:
        lines.append("no culprit: the first bad commit is one of (skipped commits leave it ambiguous):")
        lines += [f"  {c['sha'][:12]} {c['subject']}" for c in report["candidates"] or []]
    elif status == FAILED:
        lines.append(f"failed: {report['error']}")
    elif status == RUNNING:
        lines.append("still running (or interrupted): `kbench bisect resume` continues it")
    return "\n".join(lines) + "\n"
