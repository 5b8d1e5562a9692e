"""From a candidate change point to a verdict: confirm, bisect, verify — or drop.

A change point of a branch's series is a *candidate*, never yet a culprit. It becomes a
finding (``kbench.store.watch``) that goes through:

1. **confirming**: the builds on either side of its range (the last commit before it and
   the last commit in it) measured side by side now, interleaved
   (``kbench.builds.compare``). It holds when that comparison says ``regression`` (for a
   fix: ``improvement``) of at least ``min_change_pct`` (1 %). If it says neither that nor
   ``no change``, the range is widened once (``widen``: as many measured commits again on
   each side, at least three) and compared again — a change point can sit a few runs off
   when the step is small against the noise. If that does not hold either, the finding is
   ``dropped`` with the comparison that dropped it, and never tested again (a later
   candidate overlapping it is the same candidate).
2. **bisecting**, when the confirmed range holds more than one commit: ``kbench bisect``
   between its ends, a stored session tagged ``watch:<id>`` (a killed watch resumes it
   from its saved steps). Its first bad commit is the candidate culprit. No reproducible
   difference drops the finding; an answer left ambiguous by commits that do not build
   fails it (no single commit can be named).
3. **verifying**: the culprit measured side by side with its first parent, once more. Only
   if that says ``regression`` of at least ``min_change_pct`` too is the finding
   ``confirmed`` and mailed; otherwise it is dropped. So every culprit named rests on two
   interleaved comparisons that each found the change (and a bisection in between when the
   range was wider): identical builds are called a regression by one comparison with
   probability at most alpha/2 = 2.5 %, by both with at most 0.0625 %.

A fix goes the same way in the better direction, for a series with an open regression
before it, and is verified a second way too: the regression's parent against the fix
must no longer be a regression. Then the regression's status is ``fixed`` in that commit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench.bisect.driver import DONE, NO_DIFFERENCE, BisectError
from kbench.builds.compare import BuildComparison
from kbench.contract.vocabulary import IMPROVEMENT, NO_CHANGE
from kbench.jobs import JobInstance
from kbench.store.watch import FIX, OPEN, REGRESSION, WatchStore
from kbench.watch.git import commit_info, git, is_ancestor
from kbench.watch.measurer import BisectPlan, Measurer

DEFAULT_MIN_CHANGE_PCT = 1.0
"""The smallest change a watch names a culprit for: both comparisons must measure at least this
much. Builds of commits that only edit a comment still differ in where code and data land;
two such builds were measured +0.6 % (CI +0.0…+1.2 %) apart here, reproducibly within one
comparison. Such a difference is real but no commit's doing that a maintainer can act on."""
WIDEN_AT_LEAST = 3
"""Measured commits added on each side when a first confirmation does not hold."""
BISECT_SAMPLES = 10
"""Executions per bisection trial when the job does not say (``samples``)."""

Log = Callable[[str], None]


@dataclass
class Pipeline:
    """What advancing findings needs."""

    wstore: WatchStore
    measurer: Measurer
    repo: Path
    instances: dict[str, JobInstance]
    tags: tuple[str, ...]
    alpha: float
    seed: int
    log: Log
    on_confirmed: Callable[[int], None]  # a regression was confirmed (its finding id)
    min_change_pct: float = DEFAULT_MIN_CHANGE_PCT


def holds(found: BuildComparison, kind: str, min_change_pct: float) -> bool:
    """The comparison found the change a finding of ``kind`` is about, at least ``min_change_pct`` large."""
    if found.word != wanted(kind):
        return False
    return abs(found.change_pct) >= min_change_pct


def wanted(kind: str) -> str:
    return IMPROVEMENT if kind == FIX else REGRESSION


def commits_between(repo: Path, good: str, bad: str) -> int:
    """How many commits lie after ``good`` up to ``bad`` (the ancestry path a bisection walks)."""
    return int(git(repo, "rev-list", "--count", "--ancestry-path", f"{good}..{bad}").strip() or 0)


def widen(line: Sequence[str], measured: set[str], good: str, bad: str) -> tuple[str, str] | None:
    """A wider range around good..bad on ``line``: as many measured commits again on each side
    (at least ``WIDEN_AT_LEAST``), or None when it cannot grow."""
    if good not in line or bad not in line:
        return None
    position = {sha: i for i, sha in enumerate(line)}
    usable = [i for i, sha in enumerate(line) if sha in measured]
    lo, hi = position[good], position[bad]
    inside = sum(1 for i in usable if lo < i <= hi)
    step = max(WIDEN_AT_LEAST, inside)
    before = [i for i in usable if i < lo]
    after = [i for i in usable if i > hi]
    new_lo = before[max(0, len(before) - step)] if before else lo
    new_hi = after[min(len(after), step) - 1] if after else hi
    if (new_lo, new_hi) == (lo, hi):
        return None
    return line[new_lo], line[new_hi]


def describe_comparison(found: BuildComparison) -> str:
    low, high = found.ci_pct
    ci = f"CI {low:+.1f}…{high:+.1f}%" if math.isfinite(low) and math.isfinite(high) else "no CI"
    p = f"p={found.p_value:.2g}" if math.isfinite(found.p_value) else "p n/a"
    return (f"{found.base.commit[:12]} vs {found.new.commit[:12]} side by side: {found.word} "
            f"{found.change_pct:+.1f}% ({ci}, {p}; {found.blocks} blocks)")


def _comparison_entry(found: BuildComparison, why: str) -> dict[str, Any]:
    return {"why": why, **found.to_json()}


def advance(pipeline: Pipeline, finding_id: int, line: Sequence[str], measured: set[str]) -> None:
    """Take one finding as far as it goes now (module docstring); every step is stored."""
    store = pipeline.wstore
    while True:
        finding = store.finding(finding_id)
        state = finding["state"]
        instance = pipeline.instances.get(finding["instance_id"])
        if state in ("confirmed", "dropped", "failed"):
            return
        if instance is None:
            store.update_finding(finding_id, state="failed", reason="its job instance is no longer in the job file",
                                 log="failed: the job file no longer has this instance")
            return
        if state in ("suspected", "confirming"):
            _confirm(pipeline, finding, instance, line, measured)
        elif state == "bisecting":
            _bisect(pipeline, finding, instance)
        elif state == "verifying":
            _verify(pipeline, finding, instance)


def _compare(pipeline: Pipeline, finding: dict[str, Any], instance: JobInstance, base: str, new: str,
             why: str) -> BuildComparison | None:
    """The comparison, or None after marking the finding failed (a build that no longer works)."""
    seed = pipeline.seed + 1000 * int(finding["id"]) + len(finding.get("log") or [])
    tags = (*pipeline.tags, f"finding:{finding['id']}", why)
    pipeline.log(f"finding {finding['id']}: {why}: {base[:12]} vs {new[:12]} side by side")
    found = pipeline.measurer.compare(base, new, instance, tags=tags, seed=seed)
    if isinstance(found, str):
        pipeline.wstore.update_finding(finding["id"], state="failed", reason=found, log=f"{why}: failed: {found}")
        return None
    pipeline.log(f"finding {finding['id']}: {describe_comparison(found)}")
    return found


def _confirm(pipeline: Pipeline, finding: dict[str, Any], instance: JobInstance, line: Sequence[str],
             measured: set[str]) -> None:
    store, fid = pipeline.wstore, finding["id"]
    store.update_finding(fid, state="confirming")
    good, bad = finding["good"], finding["bad"]
    attempts: list[dict[str, Any]] = []
    found = _compare(pipeline, finding, instance, good, bad, "confirm")
    if found is None:
        return
    attempts.append(_comparison_entry(found, "confirm"))
    store.update_finding(fid, confirmation=attempts, log=f"confirm: {describe_comparison(found)}")
    if not holds(found, finding["kind"], pipeline.min_change_pct):
        wider = widen(line, measured, good, bad) if found.word != NO_CHANGE else None
        if wider is None:
            _drop(pipeline, fid, f"not confirmed: {describe_comparison(found)}{_small(found, finding, pipeline)}")
            return
        good, bad = wider
        found = _compare(pipeline, store.finding(fid), instance, good, bad, "confirm-wider")
        if found is None:
            return
        attempts.append(_comparison_entry(found, "confirm-wider"))
        store.update_finding(fid, confirmation=attempts, log=f"confirm, range widened: {describe_comparison(found)}")
        if not holds(found, finding["kind"], pipeline.min_change_pct):
            _drop(pipeline, fid, f"not confirmed: {describe_comparison(found)}{_small(found, finding, pipeline)} "
                                 "(and on the candidate's own range)")
            return
        known = _known_inside(pipeline, finding, good, bad)
        if known is not None:
            _drop(pipeline, fid, f"the widened range {good[:12]}..{bad[:12]} holds the culprit of finding {known}, "
                                 "which explains its change")
            return
    confirmed_range(pipeline, finding, good, bad)


def confirmed_range(pipeline: Pipeline, finding: dict[str, Any], good: str, bad: str) -> None:
    """The change holds between ``good`` and ``bad``: bisect them, or verify ``bad`` when it is the only commit."""
    store, fid = pipeline.wstore, finding["id"]
    span = commits_between(pipeline.repo, good, bad)
    if span > 1:
        store.update_finding(fid, state="bisecting", good=good, bad=bad,
                             log=f"confirmed over {span} commits {good[:12]}..{bad[:12]}: bisecting")
    else:
        same = _same_culprit(pipeline, finding, bad)
        if same is not None:
            _drop(pipeline, fid, f"{bad[:12]} is the culprit of finding {same} already")
            return
        info = commit_info(pipeline.repo, bad)
        store.update_finding(fid, state="verifying", good=good, bad=bad, culprit=bad, culprit_subject=info.subject,
                             log=f"confirmed at one commit {bad[:12]}: verifying it against its parent")


def _bisect(pipeline: Pipeline, finding: dict[str, Any], instance: JobInstance) -> None:
    store, fid = pipeline.wstore, finding["id"]
    bisection_id = finding["bisect_id"]
    if bisection_id is None:
        plan = BisectPlan(instance=instance, good=finding["good"], bad=finding["bad"],
                          tags=(*pipeline.tags, f"finding:{fid}"), samples=instance.samples or BISECT_SAMPLES,
                          seed=pipeline.seed + fid, alpha=pipeline.alpha)
        bisection_id = pipeline.measurer.start_bisection(plan)
        store.update_finding(fid, bisect_id=bisection_id, log=f"bisection {bisection_id} started")
    else:
        pipeline.log(f"finding {fid}: resuming bisection {bisection_id}")
    try:
        row = pipeline.measurer.run_bisection(bisection_id, lambda text: pipeline.log(f"bisect {bisection_id}: {text}"))
    except BisectError as exc:
        store.update_finding(fid, state="failed", reason=f"bisection {bisection_id} failed: {exc}",
                             log=f"bisection {bisection_id} failed: {exc}")
        return
    result = dict(row.get("result") or {})
    if row["status"] == NO_DIFFERENCE:
        _drop(pipeline, fid, f"bisection {bisection_id}: no reproducible difference between "
                             f"{finding['good'][:12]} and {finding['bad'][:12]}")
        return
    # an unconfirmed single candidate is verified against its parent here, as a confirmed one is
    first_bad = result.get("first_bad") or result.get("suspect")
    if row["status"] != DONE or not first_bad:
        names = ", ".join(str(c.get("sha", ""))[:12] for c in result.get("candidates") or [])
        reason = (f"bisection {bisection_id} could not single out one commit (one of {names}: commits between "
                  "do not build)" if names else f"bisection {bisection_id} ended {row['status']}")
        store.update_finding(fid, state="failed", reason=reason, log=reason)
        return
    same = _same_culprit(pipeline, finding, str(first_bad["sha"]))
    if same is not None:
        _drop(pipeline, fid, f"bisection {bisection_id} found {first_bad['sha'][:12]}, the culprit of finding {same}")
        return
    store.update_finding(fid, state="verifying", culprit=first_bad["sha"], culprit_subject=first_bad["subject"],
                         log=f"bisection {bisection_id}: first bad commit {first_bad['sha'][:12]} "
                             f"{first_bad['subject']!r}: verifying it against its parent")


def _verify(pipeline: Pipeline, finding: dict[str, Any], instance: JobInstance) -> None:
    store, fid = pipeline.wstore, finding["id"]
    culprit = str(finding["culprit"])
    parent = commit_info(pipeline.repo, culprit).parent
    if parent is None:
        store.update_finding(fid, state="failed", reason=f"{culprit[:12]} has no parent to compare it with",
                             log="failed: the culprit is a root commit")
        return
    found = _compare(pipeline, finding, instance, parent, culprit, "verify")
    if found is None:
        return
    checks = [_comparison_entry(found, "verify")]
    if not holds(found, finding["kind"], pipeline.min_change_pct):
        store.update_finding(fid, verification=checks)
        _drop(pipeline, fid, "the culprit did not differ from its parent measured again: "
                             f"{describe_comparison(found)}{_small(found, finding, pipeline)}")
        return
    if finding["kind"] == FIX:
        _verify_fix(pipeline, store.finding(fid), instance, found, checks)
        return
    store.update_finding(fid, state="confirmed", status=OPEN, verification=checks,
                         log=f"verified: {describe_comparison(found)}: confirmed, culprit {culprit[:12]}")
    pipeline.on_confirmed(fid)


def _verify_fix(pipeline: Pipeline, finding: dict[str, Any], instance: JobInstance, found: BuildComparison,
                checks: list[dict[str, Any]]) -> None:
    """The fix improved on its parent; is the series back? The regression's parent against the fix."""
    store, fid = pipeline.wstore, finding["id"]
    fixes = dict(finding.get("candidate") or {}).get("fixes")
    fixed = store.finding(int(fixes)) if fixes else None
    if fixed is None or not fixed.get("culprit"):
        store.update_finding(fid, state="confirmed", verification=checks,
                             log=f"verified: {describe_comparison(found)}")
        return
    origin = commit_info(pipeline.repo, str(fixed["culprit"])).parent
    back = _compare(pipeline, store.finding(fid), instance, str(origin), str(finding["culprit"]), "verify-back") \
        if origin else None
    if back is None:
        return
    checks.append(_comparison_entry(back, "verify-back"))
    store.update_finding(fid, state="confirmed", verification=checks,
                         log=f"verified: {describe_comparison(found)}; before the regression against the fix: "
                             f"{describe_comparison(back)}")
    if holds(back, "regression", pipeline.min_change_pct):
        store.update_finding(int(fixed["id"]), log=f"partly fixed by {str(finding['culprit'])[:12]} (finding {fid}): "
                                                   f"still {describe_comparison(back)}")
        return
    store.update_finding(int(fixed["id"]), status="fixed", fixed_in=finding["culprit"], fixed_by=fid,
                         log=f"fixed in {str(finding['culprit'])[:12]} (finding {fid}): {describe_comparison(back)}")


def _known_inside(pipeline: Pipeline, finding: dict[str, Any], good: str, bad: str) -> int | None:
    """Another live finding of this branch, instance and kind whose culprit lies in good..bad (its id)."""
    for other in pipeline.wstore.findings(int(finding["watch_id"]), kind=str(finding["kind"])):
        culprit = other["culprit"]
        if other["id"] == finding["id"] or not culprit or other["state"] not in ("verifying", "confirmed") \
                or other["branch"] != finding["branch"] or other["instance_id"] != finding["instance_id"]:
            continue
        if culprit != good and is_ancestor(pipeline.repo, good, culprit) and is_ancestor(pipeline.repo, culprit, bad):
            return int(other["id"])
    return None


def _same_culprit(pipeline: Pipeline, finding: dict[str, Any], culprit: str) -> int | None:
    """Another live finding of this branch, instance and kind that names ``culprit`` (its id)."""
    for other in pipeline.wstore.findings(int(finding["watch_id"]), kind=str(finding["kind"])):
        if other["id"] != finding["id"] and other["culprit"] == culprit and other["branch"] == finding["branch"] \
                and other["instance_id"] == finding["instance_id"] and other["state"] in ("verifying", "confirmed"):
            return int(other["id"])
    return None


def _small(found: BuildComparison, finding: dict[str, Any], pipeline: Pipeline) -> str:
    """``, smaller than --min-change 1%`` when the comparison found the change but too small."""
    if found.word == wanted(finding["kind"]) and abs(found.change_pct) < pipeline.min_change_pct:
        return f", smaller than --min-change {pipeline.min_change_pct:g}%"
    return ""


def _drop(pipeline: Pipeline, finding_id: int, reason: str) -> None:
    pipeline.log(f"finding {finding_id}: dropped: {reason}")
    pipeline.wstore.update_finding(finding_id, state="dropped", reason=reason, log=f"dropped: {reason}")
