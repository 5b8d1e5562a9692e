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

DEFAULT_BUILD_TIMEOUT_S = 3600.0
"""A build command's time limit unless ``--build-timeout`` says otherwise: an hour holds a minimal
kernel built from scratch on a small machine many times over; a build that hangs is killed then."""
BUILD_LOG_TAIL_BYTES = 64 * 1024
"""A build's output goes to a log file as it comes; this much of its end is read back for the reason
(a build that prints 400 MB no longer holds it in memory)."""
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


def run_build_command(command: str, cwd: Path, *, timeout_s: float = DEFAULT_BUILD_TIMEOUT_S,
                      log: Path | None = None) -> str | None:
    """The user's build command in a worktree: None when it succeeded, else a one-line reason
    naming the compiler error (paths relative to the worktree) or the last line it printed.

    Its output (stdout and stderr, interleaved) goes to ``log`` (default ``<worktree>.build.log``
    beside the worktree, in the workspace) as it comes; only the log's last ``BUILD_LOG_TAIL_BYTES``
    are read back; it is removed when the build succeeds. After ``timeout_s`` the build's whole
    process group is killed."""
    log = log or cwd.with_name(cwd.name + ".build.log")
    with open(log, "wb") as output:
        try:
            proc = children.run(["/bin/sh", "-c", command], cwd=cwd, stdout=output, stderr=subprocess.STDOUT,
                                timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return f"build command timed out after {_span(timeout_s)} (--build-timeout); its output: {log}"
    if proc.returncode == 0:
        log.unlink(missing_ok=True)  # a failed build's log stays in the workspace, for its whole output
        return None
    said = build_failure_reason(_tail(log).replace(f"{cwd}/", ""), keep_dirs=True)
    return f"build command: exit {proc.returncode}" + (f": {said}" if said else "")


def _span(seconds: float) -> str:
    """``5 s``, ``90 s``, ``60 min``: a time limit as it was most likely given."""
    return f"{seconds / 60:g} min" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g} s"


def _tail(path: Path) -> str:
    """The last ``BUILD_LOG_TAIL_BYTES`` of a file, as text (the first, partial line dropped)."""
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        f.seek(max(0, size - BUILD_LOG_TAIL_BYTES))
        data = f.read()
    text = data.decode(errors="replace")
    return text.split("\n", 1)[1] if size > BUILD_LOG_TAIL_BYTES and "\n" in text else text


class LabBase(Generic[Prepared]):
    def __init__(self, repo: Path, seed: int, build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S):
        self.repo = repo
        self.build_timeout_s = build_timeout_s
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
