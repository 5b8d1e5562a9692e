"""Run a job's instances on a build: the probe starts in the commit's worktree.

A ``command`` instance's ``cmd: ./prog`` is then the commit's own program. Every run is
stored with the commit (history series carry it), the label given (the branch) and the
tags given (``watch:<id>``); each instance runs ``iterations`` times as ``kbench run``
does (``kbench.engine.job_runner.run_job``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace

from kbench.builds.worktree import Build
from kbench.engine.job_runner import InstanceRuns, run_job
from kbench.jobs import JobInstance
from kbench.store.db import Store
from kbench.targets.base import Target
from kbench.targets.local import LocalTarget

InstanceCallback = Callable[[JobInstance, int], None]


class NotLocal(ValueError):
    """An instance names a kernel: a build's job runs on this machine's kernel."""


def check_local(instances: Sequence[JobInstance]) -> None:
    """NotLocal unless every instance runs on the local target (the worktree is on this machine)."""
    for instance in instances:
        if instance.target != "local":
            raise NotLocal(f"instance {instance.id} runs on {instance.target}: a watched commit's job runs where "
                           "its build is, on this machine's kernel (drop `kernel:`/`target:` from the job)")


def run_on_build(
    store: Store, instances: Sequence[JobInstance], build: Build, *, label: str | None = None,
    tags: Sequence[str] = (), on_trial: InstanceCallback | None = None,
) -> list[InstanceRuns]:
    """Every instance's runs on ``build`` (NotLocal if one names a kernel)."""
    check_local(instances)
    tagged = [replace(instance, tags=(*instance.tags, *tags, f"commit:{build.commit[:12]}")) for instance in instances]

    @contextmanager
    def in_worktree(_spec: str | None) -> Iterator[Target]:
        yield LocalTarget(cwd=build.path)

    return run_job(store, tagged, in_worktree, on_trial, commit=build.commit, label=label)
