"""A watch's fleet tasks on a worker: build commits of a repository here and measure them.

``kbench watch --fleet CLASS`` sends four kinds of task; each names its repository,
commits and build command in the task's ``spec`` and its job in the fleet job's text:

- ``watch-commit``: build one commit and run the job's instances there (``kbench.builds.job``);
  the result is ``{"state", "error", "run_ids": {instance: [run ids]}}``.
- ``watch-compare``: build two commits and compare them side by side here
  (``kbench.builds.compare``; the interleaving needs one machine); the result is the comparison.
- ``watch-build``: build one commit; the result is ``{"error": None | why}`` (a bisection's skip).
- ``watch-round``: ``rounds`` interleaved rounds of one trial per commit, each a stored run
  of the command in the commit's worktree (``kbench.bisect.lab.CommandLab``); the result is
  ``{"trials": {commit: [trial statistics]}}``.

The worker keeps a clone of each repository (``git clone --mirror``, fetched again when a
commit is missing) under its cache directory; worktrees live under the task's own
directory and are removed when the task ends. A lost attempt's partial runs are marked
interrupted and the task runs again whole.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kbench import git
from kbench.bisect.driver import ProgramFailed
from kbench.bisect.git import Worktrees
from kbench.bisect.lab import CommandLab
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
from kbench.builds.compare import compare_builds
from kbench.builds.job import run_on_build
from kbench.builds.worktree import Builder
from kbench.jobs import JobInstance
from kbench.store.db import Store

WATCH_KINDS = ("watch-commit", "watch-compare", "watch-build", "watch-round")


class RepositoryUnavailable(RuntimeError):
    """The worker cannot get the repository or a commit of it."""


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbench" / "fleet"


def _git(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return git.run(None, *args, cwd=cwd, timeout=git.NETWORK_S)


def repository(url: str, commits: list[str], root: Path | None = None) -> Path:
    """This worker's clone of ``url`` holding every commit of ``commits`` (cloned or fetched as needed)."""
    clone = (root or cache_root()) / "repos" / hashlib.sha256(url.encode()).hexdigest()[:16]
    if not (clone / "HEAD").exists():
        clone.parent.mkdir(parents=True, exist_ok=True)
        partial = clone.with_name(clone.name + f".part{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        made = _git("clone", "--quiet", "--mirror", url, str(partial))
        if made.returncode != 0:
            raise RepositoryUnavailable(f"git clone {url}: {made.stderr.strip().splitlines()[-1:]}")
        try:
            partial.rename(clone)
        except OSError:  # another worker of this host made it first
            shutil.rmtree(partial, ignore_errors=True)
    missing = [c for c in commits if _git("cat-file", "-e", f"{c}^{{commit}}", cwd=clone).returncode != 0]
    if missing:
        _git("fetch", "--quiet", "--prune", "origin", cwd=clone)
        still = [c for c in missing if _git("cat-file", "-e", f"{c}^{{commit}}", cwd=clone).returncode != 0]
        if still:
            raise RepositoryUnavailable(f"{url} has no commit {still[0][:12]} (fetched again)")
    return clone


def run_watch_task(store: Store, task: dict[str, Any], instances: list[JobInstance], tags: tuple[str, ...],
                   workdir: Path) -> dict[str, Any]:
    """Run one watch task (module docstring); its result. Its runs go to ``store`` (the task's)."""
    spec = dict(task["spec"] or {})
    kind = task["kind"]
    commits = [str(c) for c in spec["commits"]]
    repo = repository(str(spec["repo"]), commits)
    tags = (*tags, *(str(t) for t in spec.get("tags") or ()))
    with _cleaned(workdir):
        if kind == "watch-round":
            return _round(store, repo, spec, commits, tags, workdir)
        builder = Builder(repo, workdir / "builds", str(spec["build"]), timeout_s=_build_timeout(spec))
        try:
            if kind == "watch-build":
                built = builder.build(commits[0])
                return {"error": built if isinstance(built, str) else None}
            if kind == "watch-commit":
                return _commit(store, builder, instances, commits[0], spec, tags)
            if kind == "watch-compare":
                builds = []
                for commit in commits:
                    built = builder.build(commit)
                    if isinstance(built, str):
                        return {"error": f"commit {commit[:12]} does not build here: {built}"}
                    builds.append(built)
                found = compare_builds(store, builds[0], builds[1], instances[0], budget_s=float(spec["budget_s"]),
                                       alpha=float(spec["alpha"]), seed=int(spec["seed"]), tags=tags)
                return {"comparison": found.to_json()}
        finally:
            builder.remove_all()
    raise ValueError(f"unknown watch task kind {kind!r}")


def _commit(store: Store, builder: Builder, instances: list[JobInstance], commit: str, spec: dict[str, Any],
            tags: tuple[str, ...]) -> dict[str, Any]:
    from kbench.targets.base import ExecutionFailed, TargetError

    built = builder.build(commit)
    if isinstance(built, str):
        return {"state": "build-failed", "error": built, "run_ids": {}}
    try:
        done = run_on_build(store, instances, built, label=spec.get("label"), tags=tags)
    except ExecutionFailed as exc:  # never timed: the commit is skipped with the reason
        return {"state": "failed", "error": f"program failed: {' '.join(str(exc).split())[:300]}", "run_ids": {}}
    except TargetError as exc:
        return {"state": "failed", "error": f"the job failed: {' '.join(str(exc).split())[:300]}", "run_ids": {}}
    run_ids = {runs.instance.id: [run.run_id for run in runs.runs] for runs in done}
    bad = [run for runs in done for run in runs.runs if run.status != "complete"]
    if any(run.status == "interrupted" for run in bad):
        raise KeyboardInterrupt
    if bad:
        return {"state": "failed", "error": f"run {bad[0].run_id} ended {bad[0].status}", "run_ids": run_ids}
    return {"state": "measured", "error": None, "run_ids": run_ids}


def _round(store: Store, repo: Path, spec: dict[str, Any], commits: list[str], tags: tuple[str, ...],
           workdir: Path) -> dict[str, Any]:
    lab = CommandLab(store, tag=tags[0] if tags else "watch", extra_tags=tags[1:], repo=repo,
                     worktrees=Worktrees(repo, workdir / "round"), build=str(spec["build"]),
                     build_timeout_s=_build_timeout(spec),
                     command=str(spec["command"]), samples=int(spec["samples"]), seed=int(spec["seed"]),
                     metric=str(spec.get("metric", "cpu")))
    try:
        with lab:
            for commit in commits:
                error = lab.build(commit)
                if error is not None:
                    return {"error": f"commit {commit[:12]} does not build here: {error}", "trials": {}}
            try:
                return {"trials": lab.round(commits, int(spec["rounds"]))}
            except ProgramFailed as exc:  # the bisection skips that commit, as on one machine
                return {"program_failed": {"commit": exc.commit, "reason": exc.reason}, "trials": {}}
    finally:
        lab.worktrees.remove_all()


def _build_timeout(spec: dict[str, Any]) -> float:
    """The build's time limit the watch gave (tasks queued before it had one: the default)."""
    return float(spec.get("build_timeout_s") or DEFAULT_BUILD_TIMEOUT_S)


@contextmanager
def _cleaned(path: Path) -> Iterator[Path]:
    """A task's work directory, empty at the start and removed afterwards."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True, exist_ok=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def task_workdir(task_id: str) -> Path:
    return cache_root() / "work" / task_id
