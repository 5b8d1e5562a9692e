"""A bisection kept in the store: start it, run or resume it step by step, reset it.

The store keeps a bisection as one row (``Store.create_bisection``); ``Bisection`` is
that row typed, and ``SessionPlan`` what ``kbench bisect start`` decided to measure. The
lab measuring each commit is rebuilt from the row on every resume, so a killed bisection
goes on from its saved steps.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbench.bisect.driver import ABORTED, FAILED, RUNNING, BisectError, Bisector, BisectState, Settings
from kbench.bisect.git import Worktrees, ancestry_path, resolve
from kbench.bisect.kernel_lab import KernelLab
from kbench.bisect.lab import CommandLab
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
from kbench.bisect.module_lab import ModuleLab
from kbench.contract.progress import Step, no_steps
from kbench.kernels.per_commit import TREE_IMAGE
from kbench.store.db import Store
from kbench.workspaces import BISECT, held, workspace_dir

COMMAND, MODULE, KERNEL = "command", "module", "kernel"
"""What a bisection measures: a command in each commit's worktree, an out-of-tree benchmark
module built per commit in one booted kernel, or each commit's own kernel."""

DEFAULT_SAMPLES = {COMMAND: 10, MODULE: 2000, KERNEL: 2000}
"""Samples per trial: executions of a command, or calls timed by kbench.ko."""


@dataclass(frozen=True)
class Bisection:
    """A stored bisection (one row of the store's ``bisections`` table), typed."""

    id: int
    repo: Path
    good: str
    bad: str
    command: str
    build: str
    status: str
    params: Mapping[str, Any]
    refs: Mapping[str, Any] | None
    steps: list[dict[str, Any]]
    result: Mapping[str, Any] | None
    row: Mapping[str, Any] = field(repr=False, compare=False)
    """The row as the store returned it (the reports render it)."""

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Bisection:
        return cls(id=int(row["id"]), repo=Path(row["repo"]), good=str(row["good"]), bad=str(row["bad"]),
                   command=str(row["command"]), build=str(row["build"] or ""), status=str(row["status"]),
                   params=dict(row["params"] or {}), refs=row["refs"], steps=list(row["steps"] or []),
                   result=row["result"], row=row)

    @property
    def kind(self) -> str:
        return str(self.params.get("kind", COMMAND))

    @property
    def workdir(self) -> Path:
        return Path(self.params["workdir"])

    def worktrees(self) -> Worktrees:
        return Worktrees(self.repo, self.workdir)

    def settings(self) -> Settings:
        params = self.params
        return Settings(trials=int(params["trials"]), max_trials=int(params.get("max_trials", Settings.max_trials)),
                        check_trials=int(params["check_trials"]), alpha=float(params["alpha"]),
                        confirm_error=float(params.get("confirm_error", Settings.confirm_error)),
                        counted=params.get("metric") == "instructions")

    def state(self) -> BisectState:
        return BisectState(good=self.good, bad=self.bad, commits=list(self.params["commits"]),
                           refs=dict(self.refs) if self.refs is not None else None, steps=list(self.steps),
                           status=self.status, result=dict(self.result) if self.result is not None else None)


@dataclass(frozen=True)
class SessionPlan:
    """What ``kbench bisect start`` measures, checked by the command line."""

    kind: str
    build: str | None
    trials: int
    max_trials: int
    check_trials: int
    metric: str
    alpha: float
    seed: int
    command: str | None = None
    samples: int | None = None
    module: str | None = None
    kernel: str | None = None
    kernel_image: str | None = None
    kernel_modules: str | None = None
    boot_timeout: float = 120.0
    benchmark: str | None = None
    bench_params: Mapping[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    """More tags for every trial's run (``bisect:<id>`` is always there), e.g. ``watch:<id>``."""
    build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S
    """The build command's time limit (``--build-timeout``)."""
    confirm_error: float | None = None
    """The two commits the answer rests on are measured further to this error (None: Settings' 1e-6);
    ``kbench watch`` gives the search's own error and measures the culprit against its parent itself."""

    def described(self) -> str:
        """The bisection's ``command`` column: what is timed."""
        if self.kind == MODULE:
            return f"kfunc.{(self.benchmark or '?').removeprefix('kfunc.')} of {self.module} in {self.kernel}"
        if self.kind == KERNEL and self.kernel_image == TREE_IMAGE:
            return f"{self.benchmark} in each commit's kernel, built by kbench"
        if self.kind == KERNEL:
            return f"{self.benchmark} in the kernel built at {self.kernel_image}"
        if self.command is None:
            raise ValueError("a command bisection needs the command it times")
        return self.command

    def params(self, commits: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = {
            "kind": self.kind, "samples": self.samples or DEFAULT_SAMPLES[self.kind], "trials": self.trials,
            "max_trials": self.max_trials, "check_trials": self.check_trials, "metric": self.metric,
            "alpha": self.alpha, "seed": self.seed, "commits": commits, "build_timeout_s": self.build_timeout_s,
        }
        if self.tags:
            found["tags"] = list(self.tags)
        if self.confirm_error is not None:
            found["confirm_error"] = self.confirm_error
        if self.kind == MODULE:
            found.update(module=self.module, benchmark=self.benchmark, kernel=self.kernel,
                         bench_params=dict(self.bench_params))
        elif self.kind == KERNEL:
            found.update(image=self.kernel_image, modules=self.kernel_modules, benchmark=self.benchmark,
                         bench_params=dict(self.bench_params), boot_timeout=self.boot_timeout)
        return found


def start(store: Store, repo: Path, good: str, bad: str, plan: SessionPlan, *, workdir: Path | None = None,
          cache_root: Path | None = None) -> Bisection:
    """A new bisection of the commits from ``good`` (exclusive) up to ``bad``; BisectError
    if git cannot resolve them. Its worktrees go to ``workdir``, or ``cache_root/<id>`` (a
    watch's own workspace), or the store's bisection workspace (``kbench.workspaces``: keyed
    by the store's identity, since every store counts its bisections from 1)."""
    good_sha, bad_sha = resolve(repo, good), resolve(repo, bad)
    commits = ancestry_path(repo, good_sha, bad_sha)
    params = plan.params(commits)
    bisection_id = store.create_bisection(repo=str(repo), good=good_sha, bad=bad_sha, command=plan.described(),
                                          build=plan.build or "", params=params)
    if workdir is None:
        workdir = (cache_root / str(bisection_id) if cache_root is not None
                   else workspace_dir(BISECT, store.identity, bisection_id))
    params["workdir"] = str(workdir.resolve())
    store.update_bisection(bisection_id, params=params)
    return load(store, bisection_id)


def load(store: Store, bisection_id: int | None = None) -> Bisection:
    """Bisection ``bisection_id``, or the newest one (BisectionNotFound if there is none)."""
    return Bisection.from_row(store.get_bisection(bisection_id))


def make_lab(store: Store, bisection: Bisection, worktrees: Worktrees) -> CommandLab | ModuleLab | KernelLab:
    """The lab that builds and measures a commit of ``bisection``."""
    params = bisection.params
    tag = f"bisect:{bisection.id}"
    common: dict[str, Any] = {"tag": tag, "extra_tags": tuple(str(t) for t in params.get("tags") or ()),
                              "repo": bisection.repo, "worktrees": worktrees,
                              "samples": int(params["samples"]), "seed": int(params["seed"]),
                              "build_timeout_s": float(params.get("build_timeout_s", DEFAULT_BUILD_TIMEOUT_S))}
    if bisection.kind == KERNEL and params.get("image") == TREE_IMAGE:
        from kbench.bisect.kernel_tree_lab import KernelTreeLab

        return KernelTreeLab(
            store, **common, benchmark=str(params["benchmark"]), params=dict(params.get("bench_params") or {}),
            boot_timeout=float(params.get("boot_timeout", 120.0)), metric=str(params.get("metric", "wall")),
        )
    if bisection.kind == KERNEL:
        return KernelLab(
            store, **common, build=bisection.build, image=str(params["image"]), benchmark=str(params["benchmark"]),
            modules=params.get("modules"), params=dict(params.get("bench_params") or {}),
            boot_timeout=float(params.get("boot_timeout", 120.0)), metric=str(params.get("metric", "wall")),
        )
    if bisection.kind == MODULE:
        return ModuleLab(
            store, **common, build=bisection.build or None, module=str(params["module"]),
            benchmark=params.get("benchmark"), kernel=str(params["kernel"]),
            params=dict(params.get("bench_params") or {}), metric=str(params.get("metric", "wall")),
        )
    return CommandLab(store, **common, build=bisection.build, command=bisection.command,
                      metric=str(params.get("metric", "wall")))


@dataclass(frozen=True)
class SessionEnd:
    """How ``run`` ended: the stored bisection and what the guest kernel logged, if anything."""

    bisection: Bisection
    problems: list[str]


def run(store: Store, bisection_id: int, log: Callable[[str], None], progress: Step = no_steps) -> SessionEnd:
    """Run or resume a bisection from its saved steps until it ends; every step is saved as
    it is taken. On BisectError the bisection is stored FAILED and the error re-raised.
    Its workspace is held meanwhile (WorkspaceBusy when another process runs it), and the
    worktrees are removed either way. ``progress`` hears what is being done
    (kbench.contract.progress)."""
    bisection = load(store, bisection_id)
    with held(bisection.workdir, f"bisection {bisection_id}"):
        worktrees = bisection.worktrees()
        lab = make_lab(store, bisection, worktrees)

        def save(current: BisectState) -> None:
            store.update_bisection(bisection_id, status=current.status, refs=current.refs, steps=current.steps,
                                   result=current.result)

        try:
            with lab:
                Bisector(lab, bisection.state(), bisection.settings(), save=save, log=log, progress=progress).run()
        except BisectError as exc:
            store.update_bisection(bisection_id, status=FAILED, result={"error": str(exc)})
            raise
        finally:
            worktrees.remove_all()
    return SessionEnd(load(store, bisection_id), list(lab.problems))


def reset(store: Store, bisection: Bisection) -> bool:
    """Remove the bisection's worktrees and abort it if it was running; whether it was
    (WorkspaceBusy, and nothing changed, while another process runs it)."""
    with held(bisection.workdir, f"bisection {bisection.id}"):
        bisection.worktrees().remove_all()
    if bisection.status == RUNNING:
        store.update_bisection(bisection.id, status=ABORTED)
        return True
    return False
