"""A watch of a kernel tree (``kbench watch --kernel-from-build PATH``, ``--kernel-tree``): each commit's kernel booted.

The build produces a kernel (a bzImage inside the worktree, or ``.`` for the build tree),
exactly as ``kbench bisect --kernel-from-build`` takes it: ``kbench.bisect.kernel_lab.KernelLab``
builds it, boot-checks it (a kernel that panics or hangs is ``build-failed`` with the
console's reason) and keeps it. The job has one instance, a benchmark that runs in a guest
(``syscall.*``, ``kfunc.*``); every run of a commit boots its kernel afresh, as every
bisection trial does (boot-to-boot variation is part of a kernel's performance), and is
stored with the commit.

Comparing two builds here means two kernels: trials of each, one boot each, in random
order per round, judged by the sequential comparison of ``kbench bisect``'s check (alpha
spending over the rounds, at most ``MAX_ROUNDS``): the trials design of ``kbench compare
--kernel A --kernel B``. The bisection is a ``kernel`` session.

With ``--kernel-tree`` (``image`` is ``TREE_IMAGE``) there is no build command: kbench builds
each commit's kernel (``kbench.bisect.kernel_tree_lab.KernelTreeLab``), incrementally in its
build directory of the tree, and a build error is ``build failed: <first compiler error>``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from kbench.bisect import session
from kbench.bisect.driver import BisectError
from kbench.bisect.git import Worktrees
from kbench.bisect.kernel_lab import KernelLab
from kbench.bisect.kernel_tree_lab import KernelTreeLab
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
from kbench.builds.compare import BuildComparison, SideSummary
from kbench.catalog.benchmarks import lookup
from kbench.compare.sequential import SequentialComparison
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.compare.verdict import LOWER_IS_BETTER
from kbench.jobs import JobInstance
from kbench.kernels.per_commit import TREE_IMAGE
from kbench.kinds.registry import kind_of
from kbench.store.db import Store
from kbench.watch.measurer import BISECT_CONFIRM_ERROR, BisectPlan, CommitMeasured, Log

MAX_ROUNDS = 20
"""Most rounds (one boot of each kernel) of a side-by-side comparison of two kernels."""
MIN_ROUNDS = 5


class KernelJobError(ValueError):
    """The job cannot be measured in each commit's kernel."""


def kernel_instance(instances: Sequence[JobInstance]) -> JobInstance:
    """The one instance a kernel watch measures (KernelJobError says why the job does not fit)."""
    if len(instances) != 1:
        raise KernelJobError(f"with --kernel-from-build the job has one instance (the benchmark measured in each "
                             f"commit's kernel), this one has {len(instances)}")
    instance = instances[0]
    if instance.benchmark == "command" or kind_of(lookup(instance.benchmark)).sample_unit is None:
        raise KernelJobError(f"with --kernel-from-build the job measures a benchmark in the guest kernel "
                             f"(syscall.*, kfunc.*), not {instance.benchmark}")
    if instance.runtime_s is not None:
        raise KernelJobError("with --kernel-from-build the job counts samples per run: give `samples`, not a runtime")
    if instance.target != "local":
        raise KernelJobError(f"`target: {instance.target}` has no place here: the kernel is each commit's own build")
    return instance


class KernelMeasurer:
    """The ``Measurer`` of a kernel watch (module docstring)."""

    def __init__(self, store: Store, repo: Path, build: str, instance: JobInstance, workdir: Path, *,
                 image: str, modules: str | None, boot_timeout: float, tags: Sequence[str], seed: int = 0,
                 alpha: float = DEFAULT_ALPHA, build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S):
        self.store = store
        self.repo = repo
        self.build = build
        self.instance = instance
        self.workdir = workdir
        self.image = image
        self.modules = modules
        self.boot_timeout = boot_timeout
        self.alpha = alpha
        common: dict[str, Any] = {
            "tag": tags[0], "extra_tags": tuple(tags[1:]), "repo": repo,
            "worktrees": Worktrees(repo, workdir / "kernels"),
            "benchmark": instance.benchmark, "params": instance.run_params(), "seed": seed, "batch": instance.batch,
            "samples": instance.samples or session.DEFAULT_SAMPLES[session.KERNEL], "boot_timeout": boot_timeout,
            "build_timeout_s": build_timeout_s,
        }
        self.lab: KernelLab = (KernelTreeLab(store, **common) if image == TREE_IMAGE
                               else KernelLab(store, **common, build=build, image=image, modules=modules))

    def measure_commits(self, commits: Sequence[str], *, label: str,
                        tags: Sequence[str]) -> Iterator[tuple[str, CommitMeasured]]:
        for commit in commits:
            yield commit, self.measure_commit(commit, label=label)

    def measure_commit(self, commit: str, *, label: str) -> CommitMeasured:
        error = self.lab.build(commit)
        if error is not None:
            line = error.splitlines()[0]
            if isinstance(self.lab, KernelTreeLab) and not line.startswith("boot failed:"):
                line = f"build failed: {line}"  # kbench's build (bisect's skip reads the same)
            return CommitMeasured("build-failed", line)
        run_ids: list[int] = []
        try:
            for _ in range(self.instance.iterations):
                result = self.lab.measure(commit, label=label)
                run_ids.append(result.run_id)
                if result.status == "interrupted":
                    raise KeyboardInterrupt
                if result.status != "complete":
                    return CommitMeasured("failed", f"run {result.run_id} ended {result.status}",
                                          {self.instance.id: run_ids})
        except BisectError as exc:
            return CommitMeasured("failed", str(exc).splitlines()[0], {self.instance.id: run_ids})
        return CommitMeasured("measured", None, {self.instance.id: run_ids})

    def compare(self, base: str, new: str, instance: JobInstance, *, tags: Sequence[str],
                seed: int) -> BuildComparison | str:
        for commit in (base, new):
            error = self.lab.build(commit)
            if error is not None:
                return f"commit {commit[:12]} does not build or boot now: {error.splitlines()[0]}"
        bench = lookup(instance.benchmark)
        sequential = SequentialComparison(direction=bench.direction or LOWER_IS_BETTER, alpha=self.alpha,
                                          max_trials=MAX_ROUNDS, min_trials=MIN_ROUNDS,
                                          metric=bench.metric, unit=bench.unit)
        started = time.monotonic()
        before: list[float] = []
        after: list[float] = []
        step = None
        try:
            while step is None or not step.done:
                both = self.lab.round([base, new], 1)
                if not (both[base] and both[new]):
                    return f"commit {base[:12]} or {new[:12]} produced no trial statistics"
                before += both[base]
                after += both[new]
                step = sequential.add(both[base][0], both[new][0])
        except BisectError as exc:
            return str(exc).splitlines()[0]
        assert step.verdict is not None
        return BuildComparison(
            base=SideSummary.of(base, before), new=SideSummary.of(new, after), verdict=step.verdict.to_dict(),
            blocks=len(before), elapsed_s=time.monotonic() - started,
            design=(f"trials: one boot of each kernel per round, random order, {len(before)} rounds; median of "
                    "each run's steady state, sequential Mann-Whitney with alpha spending"),
            run_ids=[],
        )

    def start_bisection(self, plan: BisectPlan) -> int:
        bisect_plan = session.SessionPlan(
            kind=session.KERNEL, build=self.build, build_timeout_s=self.lab.build_timeout_s, trials=3, max_trials=15,
            check_trials=MAX_ROUNDS,
            metric="wall", alpha=plan.alpha, seed=plan.seed, samples=self.lab.samples, kernel_image=self.image,
            kernel_modules=self.modules, boot_timeout=self.boot_timeout, benchmark=plan.instance.benchmark,
            bench_params=plan.instance.run_params(), tags=plan.tags, confirm_error=BISECT_CONFIRM_ERROR,
        )
        return session.start(self.store, self.repo, plan.good, plan.bad, bisect_plan, workdir=None,
                             cache_root=self.workdir / "bisect").id

    def run_bisection(self, bisection_id: int, log: Log) -> dict[str, Any]:
        return dict(session.run(self.store, bisection_id, log).bisection.row)

    def close(self) -> None:
        """Worktrees go; the boot-checked kernel copies stay for the next poll (``KernelLab``)."""
        self.lab.close()

