"""What every lab shares: interleaved rounds, commit descriptions, the user's build command.

``LabBase.round`` interleaves with kbench's one interleaver (``kbench.engine.interleave``,
which ``kbench compare`` uses too): ``prepare`` each commit once (build it if needed, get
it where trials run), then ``n`` rounds, each one ``trial`` of every commit in a random
order, so a machine that drifts affects them alike. A lab supplies
``prepare`` and ``trial`` (and ``close`` when it holds something, e.g. a guest); a lab that
boots kernels keeps what their logs said is wrong in ``problems``.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Generic, TypeVar

import numpy as np

from kbench import children
from kbench.bisect.driver import ProgramFailed
from kbench.bisect.git import describe
from kbench.catalog.scale import primary_metric
from kbench.compare.trial import trial_statistic
from kbench.engine.interleave import interleaved_rounds
from kbench.engine.runner import RunResult
from kbench.targets.base import ExecutionFailed

BUILD_TIMEOUT_S = 4 * 3600.0  # a kernel on a small machine
REASON_CHARS = 200
_COMPILER_ERROR = re.compile(r"\b(error|undefined)\b", re.I)
_MAKE_LINE = re.compile(r"^make(\[\d+\])?: ")

Prepared = TypeVar("Prepared")


def build_failure_reason(message: str, *, keep_dirs: bool = False) -> str:
    """The line of a build failure worth showing: the last compiler error, else the last line. Its file
    name loses its directory (the module build cache's) unless ``keep_dirs`` (a kernel's kernel/sys.c)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    errors = [line for line in lines if _COMPILER_ERROR.search(line) and not _MAKE_LINE.match(line)]
    line = (errors or lines or [""])[-1]
    if not keep_dirs:
        line = re.sub(r"^\S*/(?=[^/\s]+:\d+)", "", line)  # /cache/dir/x.c:3:1: → x.c:3:1:
    return line[:REASON_CHARS]


def primary_statistic(run: RunResult, params: dict[str, str]) -> list[float]:
    """The trial statistic of one run's primary metric (empty when the run produced nothing)."""
    metric = primary_metric(run.benchmark, params)
    return [trial_statistic(s.values) for s in run.series if s.name == metric and s.values.size]


def run_build_command(command: str, cwd: Path) -> str | None:
    """The user's build command in a worktree: None when it succeeded, else a one-line reason
    naming the compiler error (paths relative to the worktree) or the last line it printed."""
    try:
        proc = children.run(["/bin/sh", "-c", command], cwd=cwd, capture_output=True, text=True,
                            timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"build command timed out after {BUILD_TIMEOUT_S:.0f} s"
    if proc.returncode == 0:
        return None
    output = (proc.stderr if proc.stderr.strip() else proc.stdout).replace(f"{cwd}/", "")
    said = build_failure_reason(output, keep_dirs=True)
    return f"build command: exit {proc.returncode}" + (f": {said}" if said else "")


class LabBase(Generic[Prepared]):
    def __init__(self, repo: Path, seed: int):
        self.repo = repo
        self._rng = np.random.default_rng(seed)
        self._described: dict[str, dict[str, str]] = {}
        self.problems: list[str] = []  # BUG/WARNING/Oops lines of a guest kernel's log, for labs that boot one

    def prepare(self, commit: str) -> Prepared:
        """Make ``commit`` ready for trials (build it if it is not built yet)."""
        raise NotImplementedError

    def trial(self, commit: str, prepared: Prepared) -> list[float]:
        """One trial of ``commit``: its statistic, or nothing when the run produced none."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the lab holds (nothing by default)."""

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        """``n`` trials of each commit: n rounds, each one trial per commit in a random order
        (ProgramFailed names the commit whose execution failed)."""
        ready = {commit: self.prepare(commit) for commit in commits}

        def trial(commit: str) -> list[float]:
            try:
                return self.trial(commit, ready[commit])
            except ExecutionFailed as exc:
                raise ProgramFailed(commit, str(exc)) from exc

        return interleaved_rounds(self._rng, commits, n, trial)

    def describe(self, commit: str) -> dict[str, str]:
        if commit not in self._described:
            self._described[commit] = describe(self.repo, commit)
        return self._described[commit]

    def __enter__(self) -> LabBase[Prepared]:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None,
    ) -> None:
        self.close()
