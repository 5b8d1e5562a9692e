"""A watch measured by fleet workers (``kbench watch --fleet CLASS``).

Every measurement becomes a fleet task of machine class CLASS (``kbench.fleet.watch_tasks``):
the new commits of a poll are sent at once, one task each, and measured by as many workers
as the class has; a confirmation or a verification is one task (the two builds compared
side by side on one machine); a bisection runs here, its builds and rounds sent as tasks
(each round of the commit, good and bad on one machine, so a round's trials interleave).
The runs are stored by the workers in the fleet's database, which is the watch's store.
Workers must run ``kbench worker --allow-command`` (the job runs the commits' programs)
and reach the repository at the URL given (``--fleet-repo``; the watched path by default).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kbench.bisect import session
from kbench.bisect.driver import BisectError, ProgramFailed
from kbench.bisect.git import describe
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
from kbench.builds.compare import BuildComparison
from kbench.fleet.settings import FleetSettings
from kbench.fleet.submit import submit_planned
from kbench.jobs import JobInstance
from kbench.store.db import Store
from kbench.store.fleet import FINISHED_STATES, FleetStore, PlannedTask
from kbench.watch.measurer import BISECT_CONFIRM_ERROR, BisectPlan, CommitMeasured, run_stored_bisection
from kbench.watch.plausible import implausible

Log = Callable[[str], None]
POLL_S = 0.5


class FleetMeasurer:
    """The ``Measurer`` of a watch whose measurements go to fleet workers of one machine class."""

    def __init__(self, store: Store, settings: FleetSettings, queue: str, *, repo: Path, repo_url: str, build: str,
                 job_text: str, job_name: str, instances: Sequence[JobInstance], budget_s: float, alpha: float,
                 workdir: Path, log: Log, build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S):
        self.store = store
        self.settings = settings
        self.fleet = FleetStore(store.engine, lease_s=settings.timing.lease_s,
                                max_attempts=settings.timing.max_attempts)
        self.queue = queue
        self.repo = repo
        self.repo_url = repo_url
        self.build = build
        self.job_text = job_text
        self.job_name = job_name
        self.instances = list(instances)
        self.budget_s = budget_s
        self.alpha = alpha
        self.workdir = workdir
        self.log = log
        self.build_timeout_s = build_timeout_s

    # -- tasks -------------------------------------------------------------------
    def _task(self, kind: str, title: str, instance_ids: Sequence[str], **spec: Any) -> PlannedTask:
        return PlannedTask(id=uuid.uuid4().hex, queue=self.queue, kind=kind, instance_ids=tuple(instance_ids),
                           label=title, repeat_index=0,
                           spec={"repo": self.repo_url, "build": self.build,
                                 "build_timeout_s": self.build_timeout_s, **spec})

    def _send(self, tasks: Sequence[PlannedTask]) -> None:
        job = submit_planned(self.settings, name=self.job_name, job_text=self.job_text, tasks=tasks, fleet=self.fleet)
        self.log(f"fleet job {job}: {len(tasks)} task(s) for machine class {self.queue}")

    def _finished(self, task_ids: Sequence[str]) -> Iterator[dict[str, Any]]:
        """Each task's row as it finishes (done, failed or cancelled), in the order they finish."""
        waiting = list(task_ids)
        while waiting:
            for task_id in list(waiting):
                row = self.fleet.task(task_id)
                if row is not None and row["state"] in FINISHED_STATES:
                    waiting.remove(task_id)
                    yield row
            if waiting:
                time.sleep(POLL_S)

    def _one(self, task: PlannedTask) -> dict[str, Any]:
        self._send([task])
        return next(self._finished([task.id]))

    # -- the Measurer ------------------------------------------------------------
    def measure_commits(self, commits: Sequence[str], *, label: str,
                        tags: Sequence[str]) -> Iterator[tuple[str, CommitMeasured]]:
        sent = [self._task("watch-commit", f"watch {label} {sha[:12]}", [i.id for i in self.instances],
                           commits=[sha], label=label, tags=list(tags)) for sha in commits]
        tasks = {task.id: sha for task, sha in zip(sent, commits, strict=True)}
        self._send(sent)
        for row in self._finished(list(tasks)):
            sha = tasks[row["id"]]
            if row["state"] != "done":
                yield sha, CommitMeasured("failed", f"fleet task {row['id']} {row['state']}: {row['error']}")
                continue
            result = dict(row["result"] or {})
            run_ids = {str(k): [int(i) for i in v] for k, v in dict(result.get("run_ids") or {}).items()}
            yield sha, CommitMeasured(str(result.get("state", "failed")), result.get("error"), run_ids)

    def measure_commit(self, commit: str, *, label: str, tags: Sequence[str]) -> CommitMeasured:
        return next(iter(self.measure_commits([commit], label=label, tags=tags)))[1]

    def compare(self, base: str, new: str, instance: JobInstance, *, tags: Sequence[str],
                seed: int) -> BuildComparison | str:
        row = self._one(self._task("watch-compare", f"watch {base[:12]} vs {new[:12]}", [instance.id],
                                   commits=[base, new], tags=list(tags), budget_s=self.budget_s, alpha=self.alpha,
                                   seed=seed))
        if row["state"] != "done":
            return f"fleet task {row['id']} {row['state']}: {row['error']}"
        result = dict(row["result"] or {})
        if "comparison" not in result:
            return str(result.get("error") or "the fleet task returned no comparison")
        found = BuildComparison.from_json(dict(result["comparison"]))
        return implausible(self.store, found) or found

    def start_bisection(self, plan: BisectPlan) -> int:
        cmd = plan.instance.run_params().get("cmd", "true")
        bisect_plan = session.SessionPlan(
            kind=session.COMMAND, build=self.build, build_timeout_s=self.build_timeout_s, trials=3, max_trials=15,
            check_trials=20, metric="cpu",
            alpha=plan.alpha, seed=plan.seed, command=cmd, samples=plan.samples,
            tags=(*plan.tags, f"instance:{plan.instance.id}"), confirm_error=BISECT_CONFIRM_ERROR,
        )
        return session.start(self.store, self.repo, plan.good, plan.bad, bisect_plan, workdir=None,
                             cache_root=self.workdir / "bisect").id

    def run_bisection(self, bisection_id: int, log: Log) -> dict[str, Any]:
        bisection = session.load(self.store, bisection_id)
        tags = [str(t) for t in bisection.params.get("tags") or ()]
        instance = next((t.split(":", 1)[1] for t in tags if t.startswith("instance:")), self.instances[0].id)
        lab = FleetLab(self, bisection, instance, [f"bisect:{bisection_id}", *tags])
        return run_stored_bisection(self.store, bisection_id, lab, log)

    def close(self) -> None:
        """Nothing held here: the workers clean their own work directories."""


class FleetLab:
    """A bisection's lab whose builds and rounds are fleet tasks (``kbench.bisect.driver.Lab``)."""

    def __init__(self, fleet: FleetMeasurer, bisection: session.Bisection, instance_id: str, tags: list[str]):
        self.fleet = fleet
        self.bisection = bisection
        self.instance_id = instance_id
        self.tags = tags
        self.rounds = 0
        self.problems: list[str] = []
        self._described: dict[str, dict[str, str]] = {}

    def build(self, commit: str) -> str | None:
        row = self.fleet._one(self.fleet._task("watch-build", f"bisect {self.bisection.id}: build {commit[:12]}",
                                               [self.instance_id], commits=[commit], tags=self.tags))
        if row["state"] != "done":
            raise BisectError(f"fleet task {row['id']} {row['state']}: {row['error']}")
        error = dict(row["result"] or {}).get("error")
        return None if error is None else str(error)

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        self.rounds += 1
        params = self.bisection.params
        row = self.fleet._one(self.fleet._task(
            "watch-round", f"bisect {self.bisection.id}: {n} round(s) of {len(commits)} commits", [self.instance_id],
            commits=list(commits), rounds=n, command=self.bisection.command, samples=int(params["samples"]),
            seed=int(params["seed"]) + self.rounds, metric=str(params.get("metric", "cpu")), tags=self.tags,
        ))
        if row["state"] != "done":
            raise BisectError(f"fleet task {row['id']} {row['state']}: {row['error']}")
        result = dict(row["result"] or {})
        if result.get("error"):
            raise BisectError(str(result["error"]))
        failed = result.get("program_failed")
        if failed:
            raise ProgramFailed(str(failed["commit"]), str(failed["reason"]))
        trials = dict(result.get("trials") or {})
        return {commit: [float(v) for v in trials.get(commit, [])] for commit in commits}

    def describe(self, commit: str) -> dict[str, str]:
        if commit not in self._described:
            self._described[commit] = describe(self.fleet.repo, commit)
        return self._described[commit]
