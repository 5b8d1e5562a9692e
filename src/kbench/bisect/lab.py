"""Real measurements for a bisection: build in a worktree, trials of the ``command`` benchmark.

A trial is one stored run of ``command`` (``execute_run``), ``samples`` executions of the
user's command in the commit's worktree; its statistic is ``trial_statistic`` (the median
of the steady-state part) of the per-execution ``wall`` times, or with metric ``cpu`` of
the child's user + system CPU time (``utime_ns + stime_ns`` from wait4): on a machine
shared with other load the wall time is mostly the scheduler's doing, the CPU time is not.
Rounds interleave as every lab's do (``labkit.LabBase.round``). With metric ``instructions`` a
trial is the command's executions counted instead (``kinds.instructions``: the PMU, else
valgrind), in the worktree: its statistic is the count per execution, which repeats exactly
(the oracle's spread is then its floor, and a commit is decided in its first rounds).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from kbench.bisect.driver import BisectError
from kbench.bisect.git import Worktrees
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S, LabBase, primary_statistic, run_build_command
from kbench.catalog.benchmarks import lookup
from kbench.compare.trial import trial_statistic
from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.engine.runner import RunResult, execute_run
from kbench.kinds.instructions.benchmark import counted
from kbench.kinds.instructions.run import counted_request
from kbench.store.db import Store
from kbench.targets.local import LocalTarget

METRICS = ("wall", "cpu", "instructions")
INSTRUCTIONS = "instructions"


class CommandLab(LabBase[RunRequest]):
    def __init__(
        self, store: Store, *, tag: str, repo: Path, worktrees: Worktrees, build: str, command: str,
        samples: int, seed: int, metric: str = "wall",
        extra_tags: tuple[str, ...] = (), build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S,
    ):
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        super().__init__(repo, seed, build_timeout_s)
        self.metric = metric
        self.store = store
        self.tag = tag
        self.extra_tags = extra_tags
        self.worktrees = worktrees
        self.build_cmd = build
        self.command = command
        self.samples = samples
        self.bench: Benchmark = counted(lookup("command")) if metric == INSTRUCTIONS else lookup("command")
        self._built: set[str] = set()

    def build(self, commit: str) -> str | None:
        path = self.worktrees.add(commit)
        error = run_build_command(self.build_cmd, path, timeout_s=self.build_timeout_s)
        if error is not None:
            self.worktrees.remove(commit)
            return error
        self._built.add(commit)
        return None

    def prepare(self, commit: str) -> RunRequest:
        if commit not in self._built:
            error = self.build(commit)
            if error is not None:
                raise BisectError(f"commit {commit[:12]} no longer builds: {error}")
        tags = (self.tag, *self.extra_tags, f"commit:{commit[:12]}")
        if self.metric == INSTRUCTIONS:  # run in the worktree (the target's cwd), under one name for every commit
            return counted_request(self.bench, RunRequest(benchmark=self.bench.name, params={"cmd": self.command},
                                                          samples=self.samples, tags=tags))
        cmd = f"cd {shlex.quote(str(self.worktrees.path(commit)))} && {self.command}"
        return RunRequest(benchmark=self.bench.name, params={"cmd": cmd}, samples=self.samples, tags=tags)

    def statistic(self, run: RunResult) -> list[float]:
        """The trial statistic of one run (empty when the run produced nothing)."""
        if self.metric == "cpu":
            columns = run.measurement.columns
            if "utime_ns" not in columns or not columns["utime_ns"].size:
                return []
            cpu = columns["utime_ns"].astype(float) + columns["stime_ns"].astype(float)
            return [trial_statistic(cpu)] if float(cpu.min()) > 0 or float(cpu.max()) > 0 else []
        return primary_statistic(run, {})

    def trial(self, commit: str, prepared: RunRequest) -> list[float]:
        cwd = self.worktrees.path(commit) if self.metric == INSTRUCTIONS else None
        return self.statistic(execute_run(self.store, self.bench, prepared, LocalTarget(cwd=cwd)))
