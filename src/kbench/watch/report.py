"""What ``kbench watch`` prints: the JSON document of a poll and its text summary."""

from __future__ import annotations

import math
from typing import Any

from kbench.watch.loop import SCHEMA_VERSION, PollResult


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and math.isfinite(float(value)) else None


def _last(found: dict[str, Any], column: str, why: str) -> dict[str, Any] | None:
    entries = [c for c in found.get(column) or [] if c.get("why") == why]
    return entries[-1] if entries else None


def regression_json(found: dict[str, Any]) -> dict[str, Any]:
    verified = _last(found, "verification", "verify") or {}
    verdict = dict(verified.get("verdict") or {})
    ci = verdict.get("ci_pct") or [None, None]
    return {
        "id": found["id"], "branch": found["branch"],
        "culprit": {"sha": found["culprit"], "subject": found["culprit_subject"]},
        "confirmed": True, "status": found["status"], "fixed_in": found["fixed_in"],
        "reverted_in": found["reverted_in"],
        "change_pct": _number(verdict.get("change_pct")), "ci_pct": [_number(ci[0]), _number(ci[1])],
        "p_value": _number(verdict.get("p_value")), "benchmark": found["benchmark"], "metric": found["metric"],
        "params": found["params"], "range": {"good": found["good"], "bad": found["bad"]},
        "bisect_id": found["bisect_id"], "report": found["report"], "followup": found["followup"],
        "run_ids": [*(verified.get("run_ids") or [])],
    }


def suspected_json(found: dict[str, Any]) -> dict[str, Any]:
    candidate = dict(found.get("candidate") or {})
    return {
        "id": found["id"], "branch": found["branch"], "kind": found["kind"], "state": found["state"],
        "benchmark": found["benchmark"], "metric": found["metric"], "change_pct": _number(candidate.get("change_pct")),
        "range": {"good": found["good"], "bad": found["bad"]}, "culprit": found["culprit"],
        "bisect_id": found["bisect_id"], "reason": found["reason"], "confirmed": False,
    }


def poll_json(result: PollResult) -> dict[str, Any]:
    watch = result.watch
    findings = result.findings
    return {
        "schema_version": SCHEMA_VERSION,
        "watch": {"id": watch["id"], "repo": watch["repo"], "branches": watch["branches"], "heads": watch["heads"]},
        "commits": [
            {"sha": c["sha"], "branch": c["branch"], "subject": c["subject"], "state": c["state"], "error": c["error"],
             "run_ids": sorted(i for ids in dict(c["run_ids"] or {}).values() for i in ids)}
            for c in result.commits
        ],
        "events": result.events,
        "regressions": [dict(regression_json(f), new=f["id"] in result.new_regressions)
                        for f in findings if f["kind"] == "regression" and f["state"] == "confirmed"],
        "suspected": [*(suspected_json(f) for f in findings if f["state"] in ("suspected", "confirming", "bisecting",
                                                                               "verifying", "failed")),
                      *result.pending],
        "fixes": [suspected_json(f) | {"confirmed": True} for f in findings if f["kind"] == "fix"
                  and f["state"] == "confirmed"],
        "dropped": [suspected_json(f) for f in findings if f["state"] == "dropped"],
    }


def poll_text(result: PollResult) -> str:
    data = poll_json(result)
    lines = [f"watch {data['watch']['id']}: {data['watch']['repo']} ({', '.join(data['watch']['branches'])})"]
    for event in data["events"]:
        lines.append(f"  {event['branch']} was force-pushed: {event['old'][:12]} -> {event['new'][:12]}; followed "
                     "from its new head")
    states: dict[str, int] = {}
    for commit in data["commits"]:
        states[commit["state"]] = states.get(commit["state"], 0) + 1
    lines.append(f"  {len(data['commits'])} new commit(s)" + (": " + ", ".join(f"{n} {s}" for s, n in states.items())
                                                               if states else "")
                 + (" (untested: beyond --max-commits; a bisection reaches them if it must)"
                    if states.get("untested") else ""))
    for commit in data["commits"]:
        if commit["error"]:
            lines.append(f"    {commit['sha'][:12]} {commit['subject'][:40]!r}: {commit['state']}: {commit['error']}")
    for found in data["regressions"]:
        change = f"{found['change_pct']:+.1f}%" if found["change_pct"] is not None else "?"
        status = found["status"] + (f" in {found['fixed_in'][:12]}" if found["fixed_in"] else "") + (
            f" in {found['reverted_in'][:12]}" if found["reverted_in"] else "")
        lines.append(f"  regression{' (new)' if found['new'] else ''}: {found['metric']} {change} due to "
                     f"{found['culprit']['sha'][:12]} {found['culprit']['subject']!r} [{status}]"
                     + (f" mail {found['report']}" if found["report"] else ""))
    for found in data["suspected"]:
        what = f"{found['change_pct']:+.1f}%" if found.get("change_pct") is not None else ""
        reason = f": {found['reason']}" if found.get("reason") else ""
        lines.append(f"  suspected ({found['state']}): {found['metric']} {what} in {found['range']['good'][:12]}.."
                     f"{found['range']['bad'][:12]}{reason}")
    for found in data["dropped"]:
        lines.append(f"  dropped: {found['metric']} in {found['range']['good'][:12]}..{found['range']['bad'][:12]}: "
                     f"{found['reason']}")
    if not data["regressions"]:
        lines.append("  no confirmed regression")
    return "\n".join(lines) + "\n"
