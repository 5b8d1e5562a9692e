"""Where a watch measures: this machine (``LocalMeasurer``) or fleet workers (``kbench.watch.fleet``).

A measurer does three things with commits of the watched repository: measure one (build
it, run the job there, store the runs), compare two side by side (the confirmation of a
candidate, the verification of a culprit), and bisect between two (the bisection is a
stored ``kbench bisect`` session, so a killed watch resumes it from its saved steps).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kbench.bisect import session
from kbench.bisect.driver import BisectError, Bisector, BisectState
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
from kbench.builds.compare import BuildComparison, compare_builds
from kbench.builds.job import run_on_build
from kbench.builds.worktree import Build, Builder
from kbench.jobs import JobInstance
from kbench.store.db import Store
from kbench.targets.base import ExecutionFailed, TargetError
from kbench.watch.plausible import implausible

Log = Callable[[str], None]
BISECT_CONFIRM_ERROR = 1e-3
"""A watch's bisection re-measures only its weak decisions (``kbench bisect`` takes the two
commits its answer rests on to 1e-6): the watch measures the culprit against its parent
side by side afterwards, and names it only if that finds the change too."""


@dataclass(frozen=True)
class CommitMeasured:
    """What measuring one commit gave: ``measured`` with the run ids of each instance,
    ``build-failed`` or ``failed`` with one line saying why."""

    state: str
    error: str | None = None
    run_ids: dict[str, list[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class BisectPlan:
    """What a watch bisects: an instance's command between two commits."""

    instance: JobInstance
    good: str
    bad: str
    tags: tuple[str, ...]
    samples: int
    seed: int
    alpha: float


class Measurer(Protocol):
    def measure_commits(self, commits: Sequence[str], *, label: str,
                        tags: Sequence[str]) -> Iterator[tuple[str, CommitMeasured]]:
        """Each commit measured, as it is done (not necessarily in order)."""
        ...

    def compare(self, base: str, new: str, instance: JobInstance, *, tags: Sequence[str],
                seed: int) -> BuildComparison | str: ...

    def start_bisection(self, plan: BisectPlan) -> int: ...

    def run_bisection(self, bisection_id: int, log: Log) -> dict[str, Any]: ...

    def close(self) -> None: ...


class LocalMeasurer:
    """Everything measured on this machine, builds in worktrees under ``workdir``."""

    def __init__(self, store: Store, repo: Path, build: str, instances: Sequence[JobInstance], workdir: Path, *,
                 budget_s: float, alpha: float, build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S):
        self.store = store
        self.repo = repo
        self.build_command = build
        self.instances = list(instances)
        self.workdir = workdir
        self.builder = Builder(repo, workdir / "builds", build, timeout_s=build_timeout_s)
        self.build_timeout_s = build_timeout_s
        self.budget_s = budget_s
        self.alpha = alpha

    def measure_commits(self, commits: Sequence[str], *, label: str,
                        tags: Sequence[str]) -> Iterator[tuple[str, CommitMeasured]]:
        for commit in commits:
            yield commit, self.measure_commit(commit, label=label, tags=tags)

    def measure_commit(self, commit: str, *, label: str, tags: Sequence[str]) -> CommitMeasured:
        built = self.builder.build(commit)
        if isinstance(built, str):
            return CommitMeasured("build-failed", built)
        try:
            done = run_on_build(self.store, self.instances, built, label=label, tags=tags)
        except ExecutionFailed as exc:  # never timed: the commit is skipped with the reason
            return CommitMeasured("failed", f"program failed: {' '.join(str(exc).split())[:300]}")
        except TargetError as exc:
            return CommitMeasured("failed", f"the job failed: {' '.join(str(exc).split())[:300]}")
        finally:
            self.builder.remove(commit)
        run_ids = {runs.instance.id: [run.run_id for run in runs.runs] for runs in done}
        bad = [run for runs in done for run in runs.runs if run.status != "complete"]
        if any(run.status == "interrupted" for run in bad):
            raise KeyboardInterrupt
        if bad:
            return CommitMeasured("failed", f"run {bad[0].run_id} ended {bad[0].status}", run_ids)
        return CommitMeasured("measured", None, run_ids)

    def compare(self, base: str, new: str, instance: JobInstance, *, tags: Sequence[str],
                seed: int) -> BuildComparison | str:
        builds: list[Build] = []
        try:
            for commit in (base, new):
                built = self.builder.build(commit)
                if isinstance(built, str):
                    return f"commit {commit[:12]} does not build now: {built}"
                builds.append(built)
            found = compare_builds(self.store, builds[0], builds[1], instance, budget_s=self.budget_s,
                                   alpha=self.alpha, seed=seed, tags=tags)
            return implausible(self.store, found) or found
        except ExecutionFailed as exc:
            return f"program failed: {' '.join(str(exc).split())[:300]}"
        finally:
            for commit in (base, new):
                self.builder.remove(commit)

    def start_bisection(self, plan: BisectPlan) -> int:
        cmd = plan.instance.run_params().get("cmd", "true")
        bisect_plan = session.SessionPlan(
            kind=session.COMMAND, build=self.build_command, build_timeout_s=self.build_timeout_s, trials=3,
            max_trials=15, check_trials=20, metric="cpu",
            alpha=plan.alpha, seed=plan.seed, command=cmd, samples=plan.samples, tags=plan.tags,
            confirm_error=BISECT_CONFIRM_ERROR,
        )
        bisection = session.start(self.store, self.repo, plan.good, plan.bad, bisect_plan, workdir=None,
                                  cache_root=self.workdir / "bisect")
        return bisection.id

    def run_bisection(self, bisection_id: int, log: Log) -> dict[str, Any]:
        """Run (or resume) it to its end; the stored row. BisectError when it cannot go on."""
        return dict(session.run(self.store, bisection_id, log).bisection.row)

    def close(self) -> None:
        self.builder.remove_all()


def run_stored_bisection(store: Store, bisection_id: int, lab: Any, log: Log) -> dict[str, Any]:
    """Run a stored bisection with ``lab`` (any ``kbench.bisect.driver.Lab``), saving every step."""
    bisection = session.load(store, bisection_id)

    def save(current: BisectState) -> None:
        store.update_bisection(bisection_id, status=current.status, refs=current.refs, steps=current.steps,
                               result=current.result)

    try:
        Bisector(lab, bisection.state(), bisection.settings(), save=save, log=log).run()
    except BisectError as exc:
        store.update_bisection(bisection_id, status="failed", result={"error": str(exc)})
        raise
    return dict(session.load(store, bisection_id).row)
