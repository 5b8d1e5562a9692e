"""Real measurements for a bisection: build in a worktree, trials of the ``command`` benchmark.

A trial is one stored run of ``command`` (``execute_run``), ``samples`` executions of the
user's command in the commit's worktree; its statistic is ``trial_statistic`` (the median
of the steady-state part) of the per-execution ``wall`` times, or with metric ``cpu`` of
the child's user + system CPU time (``utime_ns + stime_ns`` from wait4): on a machine
shared with other load the wall time is mostly the scheduler's doing, the CPU time is not.
The driver asks for randomized rounds (``round``): one trial of each commit asked for,
in a random order, so a drifting machine affects them alike.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from kbench.bisect.driver import BisectError
from kbench.bisect.git import Worktrees, describe
from kbench.catalog.benchmarks import Benchmark, lookup
from kbench.catalog.scale import primary_metric
from kbench.compare.trial import trial_statistic
from kbench.engine.request import RunRequest
from kbench.engine.runner import RunResult, execute_run
from kbench.store.db import Store
from kbench.targets.factory import make_target

BUILD_TIMEOUT_S = 3600.0
METRICS = ("wall", "cpu")


class CommandLab:
    def __init__(
        self, store: Store, *, tag: str, repo: Path, worktrees: Worktrees, build: str, command: str,
        samples: int, seed: int, metric: str = "wall",
    ):
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        self.metric = metric
        self.store = store
        self.tag = tag
        self.repo = repo
        self.worktrees = worktrees
        self.build_cmd = build
        self.command = command
        self.samples = samples
        self.seed = seed
        self.bench: Benchmark = lookup("command")
        self._built: set[str] = set()
        self._rng = np.random.default_rng(seed)
        self._described: dict[str, dict[str, str]] = {}

    def __enter__(self) -> CommandLab:
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Nothing to release: every round makes its own local target."""

    def build(self, commit: str) -> str | None:
        path = self.worktrees.add(commit)
        try:
            proc = subprocess.run(self.build_cmd, shell=True, cwd=path, capture_output=True, text=True,
                                  timeout=BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return f"timed out after {BUILD_TIMEOUT_S:.0f} s"
        if proc.returncode != 0:
            tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or [""]
            self.worktrees.remove(commit)
            return f"exit {proc.returncode}: {tail[0][:200]}"
        self._built.add(commit)
        return None

    def _request(self, commit: str, extra_tags: tuple[str, ...] = ()) -> RunRequest:
        if commit not in self._built:
            error = self.build(commit)
            if error is not None:
                raise BisectError(f"commit {commit[:12]} no longer builds: {error}")
        cmd = f"cd {shlex.quote(str(self.worktrees.path(commit)))} && {self.command}"
        return RunRequest(
            benchmark=self.bench.name, params={"cmd": cmd}, samples=self.samples,
            tags=(self.tag, f"commit:{commit[:12]}", *extra_tags),
        )

    def statistic(self, run: object) -> list[float]:
        """The trial statistic of one run (empty when the run produced nothing)."""
        if not isinstance(run, RunResult):
            raise TypeError(f"expected a measured run, got {type(run).__name__}")
        if self.metric == "cpu":
            columns = run.measurement.columns
            if "utime_ns" not in columns or not columns["utime_ns"].size:
                return []
            cpu = columns["utime_ns"].astype(float) + columns["stime_ns"].astype(float)
            return [trial_statistic(cpu)] if float(cpu.min()) > 0 or float(cpu.max()) > 0 else []
        metric = primary_metric(self.bench, {})
        return [trial_statistic(s.values) for s in run.series if s.name == metric and s.values.size]

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        """``n`` trials of each commit: n rounds, each one trial per commit in a random order."""
        requests = {commit: self._request(commit) for commit in commits}
        stats: dict[str, list[float]] = {commit: [] for commit in commits}
        with make_target(None) as target:
            for _ in range(n):
                for index in self._rng.permutation(len(commits)):
                    commit = commits[int(index)]
                    stats[commit] += self.statistic(execute_run(self.store, self.bench, requests[commit], target))
        return stats

    def describe(self, commit: str) -> dict[str, str]:
        if commit not in self._described:
            self._described[commit] = describe(self.repo, commit)
        return self._described[commit]
