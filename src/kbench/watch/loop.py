"""One poll of a watch: new commits measured, candidates turned into verdicts, mails written.

A poll, in order:

1. For each branch: its head now; the commits new since the last poll on its first-parent
   line (the first time: ``--from`` and every commit after it, or the head alone). A branch
   whose last tested head is no longer an ancestor of its head was force-pushed: that is
   recorded (``events``) and the branch is followed from its new head, after the merge
   base of old and new. With ``max_commits``, at most that many new commits are built,
   evenly spaced and always the newest; the others are ``untested`` (a bisection reaches them).
2. Each new commit, oldest first: built in a worktree and the job run there, its runs
   stored with the commit, the branch as label and the tag ``watch:<id>``; a build that
   fails is recorded with its error line and skipped. A commit already measured on another
   branch is not measured again.
3. Each branch's series (``kbench.watch.series``); every reported change point in the worse
   direction (and in the better one after an open regression) that no finding covers
   becomes a finding, and every unfinished finding is advanced (``kbench.watch.verdicts``).
4. A regression whose culprit a later commit says it reverts is ``reverted``.
5. Mails: one per newly confirmed regression; a follow-up when one is fixed or reverted.

Everything is stored as it happens: a watch killed at any point goes on from there the
next time it runs (commits left half-measured are measured again; a bisection resumes
from its saved steps).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.contract.progress import Step, no_steps
from kbench.fleet.settings import FleetSettings
from kbench.history.analysis import IMPROVEMENT, REGRESSION
from kbench.jobs import JobInstance, expand_job
from kbench.store.db import Store
from kbench.store.owners import current_owner, owner_gone
from kbench.store.watch import FIX, OPEN, REVERTED, WatchStore
from kbench.watch import git as wgit
from kbench.watch.mail import MAIL_COMMAND_TIMEOUT_S
from kbench.watch.measurer import LocalMeasurer, Measurer
from kbench.watch.outbox import cut_short, mail_confirmed, mail_status
from kbench.watch.preflight import refusal
from kbench.watch.series import BranchSeries, branch_series, watched_metric
from kbench.watch.verdicts import (
    DEFAULT_MIN_CHANGE_PCT,
    Pipeline,
    advance,
    confirmed_range,
    describe_comparison,
    holds,
)
from kbench.workspaces import WATCH, WorkspaceBusy, held, workspace_dir

Log = Callable[[str], None]
SCHEMA_VERSION = 1


class WatchError(RuntimeError):
    """The watch cannot run as asked (not a repository, no such branch, busy elsewhere)."""


@dataclass(frozen=True)
class WatchOptions:
    repo: Path
    branches: tuple[str, ...]
    build: str
    job: Path
    start: str | None = None  # --from
    outbox: Path | None = None
    mail_command: str | None = None
    mail_to: tuple[str, ...] = ()
    mail_timeout_s: float = MAIL_COMMAND_TIMEOUT_S
    max_commits: int | None = None
    budget_s: float = 20.0
    alpha: float = DEFAULT_ALPHA
    min_change_pct: float = DEFAULT_MIN_CHANGE_PCT
    seed: int = 0
    fetch: bool = False
    workdir: Path | None = None
    fleet_queue: str | None = None
    fleet_repo: str | None = None  # the repository's URL as fleet workers reach it (default: ``repo``)
    kernel_image: str | None = None  # --kernel-from-build: the kernel the build makes, booted for the job
    kernel_modules: str | None = None
    boot_timeout: float = 120.0
    build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S

    def key(self) -> str:
        """What makes a watch the same watch: the repository, branches, build and job file."""
        data = [str(self.repo.resolve()), sorted(self.branches), self.build, str(self.job.resolve()),
                self.fleet_queue, self.kernel_image]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:32]

    def stored(self) -> dict[str, Any]:
        return {"outbox": str(self.outbox) if self.outbox else None, "mail_command": self.mail_command,
                "mail_to": list(self.mail_to), "max_commits": self.max_commits, "budget_s": self.budget_s,
                "min_change_pct": self.min_change_pct,
                "alpha": self.alpha, "seed": self.seed, "fleet_queue": self.fleet_queue,
                "kernel_image": self.kernel_image, "kernel_modules": self.kernel_modules,
                "boot_timeout": self.boot_timeout, "build_timeout_s": self.build_timeout_s}


@dataclass
class BranchPlan:
    branch: str
    head: str
    new: list[str]
    test: list[str]
    base: str
    event: dict[str, Any] | None = None


@dataclass
class PollResult:
    """What one poll did and what the watch knows (``to_json`` is ``watch --json``'s document)."""

    watch: dict[str, Any]
    commits: list[dict[str, Any]] = field(default_factory=list)  # met in this poll, in order
    events: list[dict[str, Any]] = field(default_factory=list)  # this poll's
    findings: list[dict[str, Any]] = field(default_factory=list)  # every finding of the watch, after the poll
    pending: list[dict[str, Any]] = field(default_factory=list)  # change points waiting for runs
    new_regressions: list[int] = field(default_factory=list)  # confirmed in this poll
    mail_failures: list[str] = field(default_factory=list)  # mails of this poll not sent, and why

    def regressions(self) -> list[dict[str, Any]]:
        return [f for f in self.findings if f["kind"] == "regression" and f["state"] == "confirmed"]


def sample(commits: Sequence[str], limit: int | None) -> list[str]:
    """At most ``limit`` of ``commits``, evenly spaced, the first and the last always among them."""
    if limit is None or len(commits) <= limit:
        return list(commits)
    if limit == 1:
        return [commits[-1]]
    step = (len(commits) - 1) / (limit - 1)
    return list(dict.fromkeys(commits[round(i * step)] for i in range(limit)))


def plan_branch(repo: Path, branch: str, heads: dict[str, Any], start: str | None, limit: int | None) -> BranchPlan:
    head = wgit.resolve(repo, branch)
    if head is None:
        raise WatchError(f"branch {branch!r} names no commit in {repo}")
    known = heads.get(branch)
    if known is not None and known.get("tested") is None:  # a first poll that was cut short: from its base again
        start, known = str(known["base"]), None
    if known is None:
        if start is not None:
            first = wgit.resolve(repo, start)
            if first is None:
                raise WatchError(f"--from {start!r} names no commit in {repo}")
            if not wgit.is_ancestor(repo, first, head):
                raise WatchError(f"--from {start!r} ({first[:12]}) is not an ancestor of {branch} ({head[:12]})")
            new = [first, *wgit.first_parent_after(repo, first, head)]
        else:
            new = [head]
        return BranchPlan(branch, head, new, sample(new, limit), base=new[0])
    tested, base = str(known["tested"]), str(known["base"])
    if tested == head:
        return BranchPlan(branch, head, [], [], base)
    if wgit.is_ancestor(repo, tested, head):
        new = wgit.first_parent_after(repo, tested, head)
        return BranchPlan(branch, head, new, sample(new, limit), base)
    merge_base = wgit.merge_base(repo, tested, head)
    new = wgit.first_parent_after(repo, merge_base, head) if merge_base else [head]
    if not wgit.is_ancestor(repo, base, head):
        base = new[0] if merge_base is None else merge_base
    event = {"at": datetime.now(UTC).isoformat(), "branch": branch, "kind": "force-push", "old": tested,
             "new": head, "merge_base": merge_base}
    return BranchPlan(branch, head, new, sample(new, limit), base, event)


def branch_line(repo: Path, base: str, head: str) -> list[str]:
    """The branch's first-parent line from ``base`` to ``head``, oldest first."""
    return [base, *wgit.first_parent_after(repo, base, head)]


class Watch:
    """One watch over a store: ``poll()`` as often as wanted."""

    def __init__(self, store: Store, options: WatchOptions, *, log: Log, cpu_count: int | None = None,
                 fleet: FleetSettings | None = None, progress: Step = no_steps):
        self.store = store
        self.options = options
        self.log = log
        self.progress = progress  # the new commits built and measured at a poll (kbench.contract.progress)
        try:
            self.repo = wgit.check_repository(options.repo)
        except wgit.GitError as exc:
            raise WatchError(f"{options.repo} is not a git repository: {exc}") from exc
        self.wstore = WatchStore(store.engine)
        self.job_text = options.job.read_text()
        self.instances: list[JobInstance] = expand_job(self.job_text, cpu_count=cpu_count or os.cpu_count() or 1,
                                                       name=str(options.job))
        if options.kernel_image is not None:
            from kbench.watch.kernel import KernelJobError, kernel_instance

            if options.fleet_queue is not None:
                raise WatchError("--kernel-from-build boots each commit's kernel here; it does not go with --fleet")
            try:
                kernel_instance(self.instances)
            except KernelJobError as exc:
                raise WatchError(f"{options.job}: {exc}") from None
        elif not [i for i in self.instances if not i.control and i.benchmark == "command"]:
            raise WatchError(f"{options.job}: the job has no `command` instance (other than a control): nothing in it "
                             "runs the commit's build (a kernel tree: --kernel-from-build)")
        refused = refusal(self.repo, options.branches, options.start, self.wstore.find_watch(options.key()),
                          options.fleet_repo)
        if refused is not None:  # before the row is written: a refused watch changes nothing
            raise WatchError(refused)
        row, created = self.wstore.open_watch(
            key=options.key(), repo=str(self.repo), branches=list(options.branches), build=options.build,
            job_path=str(options.job.resolve()), job_text=self.job_text, options=options.stored(),
        )
        self.id = int(row["id"])
        self.created = created
        self.tags = (f"watch:{self.id}",)
        # the store's identity, not only the id: every store counts its watches from 1
        self.workdir = workdir = options.workdir or workspace_dir(WATCH, store.identity, self.id)
        self._workspace = ExitStack()
        self.measurer: Measurer
        if options.kernel_image is not None:
            from kbench.watch.kernel import KernelMeasurer, kernel_instance

            self.measurer = KernelMeasurer(
                store, self.repo, options.build, kernel_instance(self.instances), workdir, image=options.kernel_image,
                modules=options.kernel_modules, boot_timeout=options.boot_timeout, tags=self.tags, seed=options.seed,
                alpha=options.alpha, build_timeout_s=options.build_timeout_s,
            )
        elif options.fleet_queue is not None:
            if fleet is None:
                raise WatchError("--fleet needs the fleet's settings (broker and database)")
            from kbench.watch.fleet import FleetMeasurer

            self.measurer = FleetMeasurer(
                store, fleet, options.fleet_queue, repo=self.repo, repo_url=options.fleet_repo or str(self.repo),
                build=options.build, job_text=self.job_text, job_name=options.job.name, instances=self.instances,
                budget_s=options.budget_s, alpha=options.alpha, workdir=workdir, log=log,
                build_timeout_s=options.build_timeout_s,
            )
        else:
            self.measurer = LocalMeasurer(store, self.repo, options.build, self.instances, workdir,
                                          budget_s=options.budget_s, alpha=options.alpha,
                                          build_timeout_s=options.build_timeout_s)

    # -- ownership --------------------------------------------------------------------
    def claim(self) -> None:
        """This process runs the watch now, in its workspace; WatchError if a live one already does."""
        try:
            self._workspace.enter_context(held(self.workdir, f"watch {self.id}"))
        except WorkspaceBusy as exc:
            raise WatchError(str(exc)) from None
        row = self.wstore.get_watch(self.id)
        owner = row.get("owner") or {}
        if owner and owner.get("pid") != os.getpid():
            started = datetime.fromisoformat(str(owner.get("since")))
            if not owner_gone(owner.get("pid"), owner.get("boot_id"), owner.get("host"), started):
                raise WatchError(f"watch {self.id} is being run by process {owner.get('pid')} on {owner.get('host')}")
        me = current_owner()
        self.wstore.update_watch(self.id, owner={"pid": me.pid, "boot_id": me.boot_id, "host": me.host,
                                                 "since": datetime.now(UTC).isoformat()})

    def release(self) -> None:
        try:
            self.wstore.update_watch(self.id, owner=None)
            self.measurer.close()
        finally:
            self._workspace.close()

    # -- one poll ---------------------------------------------------------------------
    def poll(self) -> PollResult:
        result = PollResult(watch=self.wstore.get_watch(self.id))
        if self.options.fetch:
            failed = wgit.fetch(self.repo)
            if failed:
                self.log(f"git fetch failed ({failed}); going on with the refs there are")
        heads = dict(self.wstore.get_watch(self.id)["heads"] or {})
        previous = {branch: str(known["tested"]) for branch, known in heads.items() if known.get("tested")}
        plans = [plan_branch(self.repo, branch, heads, self.options.start, self.options.max_commits)
                 for branch in self.options.branches]
        for plan in plans:
            if plan.event is not None:
                self._record_event(plan.event)
                result.events.append(plan.event)
            self._add_commits(plan)
            # the base now, the head once measured: a poll killed in between starts again from this base
            heads[plan.branch] = {"base": plan.base, "tested": previous.get(plan.branch)}
        self.wstore.update_watch(self.id, heads=heads)
        self._measure_unmeasured(result)
        self.progress("looking for changes in the new runs", 0, None)
        result.commits = self._accounted(plans, result.commits)
        for plan in plans:
            heads[plan.branch] = {"base": plan.base, "tested": plan.head}
        self.wstore.update_watch(self.id, heads=heads)
        pipeline = Pipeline(self.wstore, self.measurer, self.repo, {i.id: i for i in self.instances}, self.tags,
                            self.options.alpha, self.options.seed, self.log,
                            on_confirmed=lambda fid: result.new_regressions.append(fid),
                            min_change_pct=self.options.min_change_pct)
        for plan in plans:
            line = branch_line(self.repo, plan.base, plan.head)
            commits = self.wstore.commits(self.id, plan.branch)
            measured = {row["sha"] for row in commits if row["state"] == "measured"}
            judged = [*self._watched(), *(i for i in self.instances if i.control)]
            series = branch_series(self.store.engine, judged, commits, line, watch_id=self.id)
            self._new_findings(plan.branch, line, series, result)
            for finding in self.wstore.findings(self.id, states=("suspected", "confirming", "bisecting", "verifying")):
                if finding["branch"] == plan.branch:
                    advance(pipeline, int(finding["id"]), line, measured)
            if plan.event is None:
                self._head_check(pipeline, plan.branch, previous.get(plan.branch) or plan.base, line, measured)
            self._reverts(plan.branch, line)
            for fix in self._fix_checks(pipeline, plan.branch, line, measured):
                advance(pipeline, fix, line, measured)
        result.mail_failures = self._mail()
        result.watch = self.wstore.get_watch(self.id)
        result.findings = self.wstore.findings(self.id)
        return result

    def _accounted(self, plans: Sequence[BranchPlan], measured: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Every commit new at this poll, in branch order, as it stands now (measured, failed to build,
        failed, or untested: beyond --max-commits), then those measured now that an earlier poll met."""
        rows = {(row["branch"], row["sha"]): row for row in self.wstore.commits(self.id)}
        new = [(plan.branch, sha) for plan in plans for sha in plan.new]
        earlier = [row for row in measured if (row["branch"], row["sha"]) not in set(new)]
        return [rows[key] for key in new if key in rows] + earlier

    def _record_event(self, event: dict[str, Any]) -> None:
        events = list(self.wstore.get_watch(self.id)["events"] or [])
        self.wstore.update_watch(self.id, events=[*events, event])
        merge = event["merge_base"]
        self.log(f"branch {event['branch']} was force-pushed: {event['old'][:12]} is no longer on it; following its "
                 f"new head {event['new'][:12]}" + (f" from the merge base {merge[:12]}" if merge else ""))

    def _add_commits(self, plan: BranchPlan) -> None:
        tested = set(plan.test)
        for sha in plan.new:
            info = wgit.commit_info(self.repo, sha)
            self.wstore.add_commit(self.id, plan.branch, sha, parent=info.parent, subject=info.subject,
                                   state="queued" if sha in tested else "untested")

    def _measure_unmeasured(self, result: PollResult) -> None:
        rows = [row for row in self.wstore.commits(self.id) if row["state"] in ("queued", "building", "measuring")]
        done: dict[str, dict[str, Any]] = {row["sha"]: row for row in self.wstore.commits(self.id)
                                           if row["state"] in ("measured", "build-failed", "failed")}
        todo: dict[str, list[str]] = {}  # sha -> the branches it waits on
        for row in rows:
            earlier = done.get(row["sha"])
            if earlier is not None:  # measured on another branch: the same build, the same runs
                self._record(row["sha"], row["branch"], earlier["state"], earlier["error"], earlier["run_ids"], result)
            else:
                todo.setdefault(row["sha"], []).append(row["branch"])
        if not todo:
            return
        for sha, branches in todo.items():
            subject = next(r["subject"] for r in rows if r["sha"] == sha)
            self.log(f"{branches[0]} {sha[:12]} {subject!r}: building and measuring")
            self.wstore.update_commit(self.id, sha, state="measuring", run_ids={}, error=None)
        label = next(iter(todo.values()))[0]
        what = "building and measuring the new commits"
        self.progress(what, 0, len(todo))
        for finished, (sha, measured) in enumerate(
                self.measurer.measure_commits(list(todo), label=label, tags=self.tags), start=1):
            self.progress(what, finished, len(todo))
            if measured.error:
                self.log(f"{todo[sha][0]} {sha[:12]}: {measured.state}: {measured.error}")
            for branch in todo[sha]:
                self._record(sha, branch, measured.state, measured.error, measured.run_ids, result)

    def _record(self, sha: str, branch: str, state: str, error: str | None, run_ids: Any,
                result: PollResult) -> None:
        self.wstore.update_commit(self.id, sha, branch=branch, state=state, error=error, run_ids=run_ids)
        result.commits.append(next(r for r in self.wstore.commits(self.id, branch) if r["sha"] == sha))

    def _new_findings(self, branch: str, line: list[str], series: list[BranchSeries], result: PollResult) -> None:
        position = {sha: i for i, sha in enumerate(line)}
        for found in series:
            for point in found.history.pending:
                result.pending.append(_pending_json(branch, found, point.to_json(), found.range_of(point)))
            for point in found.history.change_points:
                good, bad = found.range_of(point)
                if good not in position or bad not in position:
                    continue
                existing = [f for f in self.wstore.findings(self.id) if f["branch"] == branch
                            and f["instance_id"] == found.instance.id]
                kind, fixes = _kind(point.verdict, existing, position, bad)
                if kind is None or _covered(existing, kind, position, good, bad):
                    continue
                candidate = {**point.to_json(), "series_id": found.series.id, "controlled": found.controlled,
                             "runs": len(found.series.points), "good": good, "bad": bad}
                if fixes is not None:
                    candidate["fixes"] = fixes
                fid = self.wstore.add_finding(
                    self.id, branch=branch, instance_id=found.instance.id, benchmark=found.instance.benchmark,
                    metric=found.metric, params=found.instance.run_params(), series_id=found.series.id,
                    kind=kind, good=good, bad=bad, candidate=candidate,
                    log=[f"candidate: {point.change.change_pct:+.1f}% change point of {found.series.metric} "
                         f"between {good[:12]} and {bad[:12]} (p={point.change.p_value:.2g}, "
                         f"{point.change.before.n} runs before, {point.change.after.n} after)"],
                )
                self.log(f"finding {fid}: candidate {kind}: {found.series.metric} {point.change.change_pct:+.1f}% "
                         f"in {good[:12]}..{bad[:12]}")

    def _head_check(self, pipeline: Pipeline, branch: str, previous: str | None, line: list[str],
                    measured: set[str]) -> None:
        """The branch's head before this poll (at the first poll: the first commit measured) and its
        newest measured commit now, side by side (each watched instance), unless a finding of those
        commits is under way or confirmed: a regression of ``--min-change`` there is a candidate whose
        first comparison is this one, whatever the nightly numbers show. On this shared VM a run's CPU
        time drifts by as much as a 2 % step over a few minutes, so a step can stay invisible in the
        series (seen in benchmarks/watch_accuracy.py); side by side it is plain."""
        newest = next((sha for sha in reversed(line) if sha in measured), None)
        if previous is None or newest is None or previous == newest or previous not in measured:
            return
        position = {sha: i for i, sha in enumerate(line)}
        if previous not in position or position[previous] >= position[newest]:
            return
        for instance in self._watched():
            live = [f for f in self.wstore.findings(self.id) if f["branch"] == branch
                    and f["instance_id"] == instance.id and f["state"] not in ("dropped", "failed")]
            if _covered(live, "regression", position, previous, newest):
                continue  # a finding of these commits is under way or confirmed
            self.log(f"{branch}: head check of {instance.benchmark}: {previous[:12]} vs {newest[:12]} side by side")
            found = self.measurer.compare(previous, newest, instance, seed=self.options.seed + position[newest],
                                          tags=(*self.tags, "head-check"))
            if isinstance(found, str):
                self.log(f"{branch}: head check failed: {found}")
                continue
            text = describe_comparison(found)
            self.log(f"{branch}: head check: {text}")
            if not holds(found, "regression", self.options.min_change_pct):
                continue
            fid = self.wstore.add_finding(
                self.id, branch=branch, instance_id=instance.id, benchmark=instance.benchmark,
                metric=watched_metric(instance), params=instance.run_params(), series_id=None, kind="regression",
                state="confirming", good=previous, bad=newest,
                candidate={"by": "head check", "good": previous, "bad": newest, "change_pct": found.change_pct},
                confirmation=[{"why": "head-check", **found.to_json()}],
                log=[f"candidate: the head moved {previous[:12]}..{newest[:12]} and measured side by side: {text}"],
            )
            self.log(f"finding {fid}: candidate regression from the head check in {previous[:12]}..{newest[:12]}")
            confirmed_range(pipeline, self.wstore.finding(fid), previous, newest)
            advance(pipeline, fid, line, measured)

    def _watched(self) -> list[JobInstance]:
        """The instances a watch judges: its command instances, or a kernel watch's one benchmark."""
        if self.options.kernel_image is not None:
            return [i for i in self.instances if not i.control]
        return [i for i in self.instances if not i.control and i.benchmark == "command"]

    def _fix_checks(self, pipeline: Pipeline, branch: str, line: list[str], measured: set[str]) -> list[int]:
        """Open regressions of the branch whose newest measured commit is new since their last
        check: the culprit and that commit measured side by side. An improvement of at least
        ``--min-change`` there is a fix candidate whose first comparison is this one (the findings
        made, to be advanced: bisected between culprit and newest, the fix verified against its
        parent and the regression's parent against the fix). The nightly numbers alone often cannot
        show a fix: the machine drifts as much over the runs after a regression. Asking "is the
        series back at the regression's parent?" first instead made a doomed candidate at every poll
        whenever the regression measured below ``--min-change`` there (about 17 s each, dropped)."""
        position = {sha: i for i, sha in enumerate(line)}
        newest = next((sha for sha in reversed(line) if sha in measured), None)
        made: list[int] = []
        for finding in self.wstore.findings(self.id, states=("confirmed",), kind="regression"):
            culprit = str(finding["culprit"])
            candidate = dict(finding.get("candidate") or {})
            if finding["branch"] != branch or finding["status"] != OPEN or newest is None or culprit not in position \
                    or position[newest] <= position[culprit] or candidate.get("fix_checked") == newest:
                continue
            live = [f for f in self.wstore.findings(self.id, kind=FIX)
                    if dict(f.get("candidate") or {}).get("fixes") == finding["id"]
                    and f["state"] != "dropped"]
            instance = next((i for i in self.instances if i.id == finding["instance_id"]), None)
            if live or instance is None:
                continue
            self.log(f"finding {finding['id']}: fixed by {newest[:12]}? {culprit[:12]} vs {newest[:12]} side by side")
            found = self.measurer.compare(culprit, newest, instance, seed=self.options.seed + int(finding["id"]),
                                          tags=(*self.tags, f"finding:{finding['id']}", "fix-check"))
            candidate["fix_checked"] = newest
            if isinstance(found, str):
                self.wstore.update_finding(int(finding["id"]), candidate=candidate, log=f"fix check failed: {found}")
                continue
            text = describe_comparison(found)
            self.wstore.update_finding(int(finding["id"]), candidate=candidate, log=f"fix check: {text}")
            self.log(f"finding {finding['id']}: fix check: {text}")
            if not holds(found, FIX, self.options.min_change_pct):
                continue
            fid = self.wstore.add_finding(
                self.id, branch=branch, instance_id=finding["instance_id"], benchmark=finding["benchmark"],
                metric=finding["metric"], params=finding["params"], series_id=finding["series_id"], kind=FIX,
                state="confirming", good=culprit, bad=newest,
                candidate={"fixes": int(finding["id"]), "by": "fix check", "good": culprit, "bad": newest,
                           "change_pct": found.change_pct},
                confirmation=[{"why": "fix-check", **found.to_json()}],
                log=[f"candidate: finding {finding['id']}'s culprit against {newest[:12]}: {text}"],
            )
            self.log(f"finding {fid}: candidate fix of finding {finding['id']} in {culprit[:12]}..{newest[:12]}")
            confirmed_range(pipeline, self.wstore.finding(fid), culprit, newest)
            made.append(fid)
        return made

    def _reverts(self, branch: str, line: list[str]) -> None:
        position = {sha: i for i, sha in enumerate(line)}
        for finding in self.wstore.findings(self.id, states=("confirmed",), kind="regression"):
            culprit = finding.get("culprit")
            if finding["branch"] != branch or finding["status"] != OPEN or culprit not in position:
                continue
            for sha in line[position[culprit] + 1:]:
                reverted = wgit.commit_info(self.repo, sha).reverted()
                if any(culprit.startswith(r) or r.startswith(culprit) for r in reverted):
                    self.wstore.update_finding(int(finding["id"]), status=REVERTED, reverted_in=sha,
                                               log=f"reverted in {sha[:12]}")
                    self.log(f"finding {finding['id']}: culprit {culprit[:12]} reverted in {sha[:12]}")
                    break

    def _mail(self) -> list[str]:
        """Mail what is new (regressions, then follow-ups); why any of those mails was not sent."""
        outbox = self.options.outbox
        failed: list[str] = []
        for finding in self.wstore.findings(self.id, states=("confirmed",), kind="regression"):
            cut = cut_short(self, finding)
            if cut is not None:
                self.log(cut)
            if finding["report"] is None and outbox is not None:
                failed.append(mail_confirmed(self, finding, outbox) or "")
            elif finding["report"] and finding["status"] != OPEN and not finding["followup"] and outbox is not None:
                failed.append(mail_status(self, finding, outbox) or "")
        return [why for why in failed if why]


def _kind(
    verdict: str, existing: list[dict[str, Any]], position: dict[str, int], bad: str,
) -> tuple[str | None, int | None]:
    if verdict == REGRESSION:
        return "regression", None
    if verdict != IMPROVEMENT:
        return None, None
    open_before = [f for f in existing if f["kind"] == "regression" and f["state"] == "confirmed"
                   and f["status"] == OPEN and position.get(str(f["culprit"]), len(position)) < position[bad]]
    return (FIX, int(open_before[-1]["id"])) if open_before else (None, None)


def _covered(existing: list[dict[str, Any]], kind: str, position: dict[str, int], good: str, bad: str) -> bool:
    """A finding of this kind already covers part of good..bad (its candidate's range, the range it
    confirmed, or its culprit): the candidate is that finding again."""
    lo, hi = position[good], position[bad]
    for finding in existing:
        if finding["kind"] != kind:
            continue
        candidate = dict(finding.get("candidate") or {})
        for start, end in ((candidate.get("good"), candidate.get("bad")), (finding["good"], finding["bad"])):
            if start in position and end in position and max(lo, position[start]) < min(hi, position[end]):
                return True
        culprit = finding.get("culprit")
        if culprit in position and lo < position[culprit] <= hi:
            return True
    return False


def _pending_json(branch: str, found: BranchSeries, point: dict[str, Any], span: tuple[str, str]) -> dict[str, Any]:
    return {"branch": branch, "benchmark": found.instance.benchmark, "metric": found.series.metric,
            "change_pct": point["change_pct"], "runs_before": point["runs_before"], "runs_after": point["runs_after"],
            "range": {"good": span[0], "bad": span[1]}, "state": "pending"}


