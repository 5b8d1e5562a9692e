"""What changed between two runs: kernel releases, commits and labels, and the git log between."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

from kbench import git
from kbench.contract.json_document import utc_timestamp
from kbench.history.series import Point

GIT_LOG_LIMIT = 200
"""At most this many commits of a range are listed (a range that long needs bisecting anyway)."""


@dataclass(frozen=True)
class Version:
    """The version one run measured."""

    run_id: int
    started_at: datetime
    kernel: str | None
    commit: str | None
    label: str | None

    @classmethod
    def of(cls, point: Point) -> Version:
        return cls(point.run_id, point.started_at, point.kernel, point.commit, point.label)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "started_at": utc_timestamp(self.started_at), "kernel": self.kernel,
            "commit": self.commit, "label": self.label,
        }


@dataclass(frozen=True)
class GitCommit:
    id: str
    author: str
    date: str
    subject: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "author": self.author, "date": self.date, "subject": self.subject}


@dataclass(frozen=True)
class Correlated:
    """The versions between the last run before a change point and the first run after it."""

    before: Version
    after: Version
    git_log: tuple[GitCommit, ...] | None = None  # with a repository: the commits of before..after
    git_error: str | None = None  # why the log could not be read

    @property
    def commits(self) -> list[str]:
        return _changed(self.before.commit, self.after.commit)

    @property
    def kernels(self) -> list[str]:
        return _changed(self.before.kernel, self.after.kernel)

    @property
    def labels(self) -> list[str]:
        return _changed(self.before.label, self.after.label)

    @property
    def commit_range(self) -> str | None:
        """``before..after`` (git's notation) when both runs carry a commit and they differ."""
        if self.before.commit and self.after.commit and self.before.commit != self.after.commit:
            return f"{self.before.commit}..{self.after.commit}"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "last_before": self.before.to_json(), "first_after": self.after.to_json(),
            "commits": self.commits, "kernels": self.kernels, "labels": self.labels,
            "range": self.commit_range,
            "git_log": None if self.git_log is None else [c.to_json() for c in self.git_log],
            "git_error": self.git_error,
        }


def _changed(before: str | None, after: str | None) -> list[str]:
    """The distinct values of the two runs, before first (one when nothing changed)."""
    return [v for i, v in enumerate((before, after)) if v and v not in (before, after)[:i]]


def correlate(before: Point, after: Point, repo: Path | None = None) -> Correlated:
    first, last = Version.of(before), Version.of(after)
    correlated = Correlated(first, last)
    if repo is None or correlated.commit_range is None:
        return correlated
    log, error = git_log(str(repo), str(first.commit), str(last.commit))
    return Correlated(first, last, log, error)


@cache
def git_log(repo: str, start: str, end: str) -> tuple[tuple[GitCommit, ...] | None, str | None]:
    """The commits of ``start..end`` in ``repo``, newest first, or (None, why not)."""
    try:
        proc = git.run(repo, "log", f"--max-count={GIT_LOG_LIMIT}", "--format=%H%x1f%an%x1f%aI%x1f%s",
                       f"{start}..{end}", "--", timeout=git.LOG_S)
    except git.GitError as exc:
        return None, f"git log failed: {exc.__cause__}"
    if proc.returncode != 0:
        said = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[0]
        return None, f"git log {start[:12]}..{end[:12]} in {repo}: {said}"
    commits = []
    for line in proc.stdout.splitlines():
        parts = line.split("\x1f")
        if len(parts) == 4:
            commits.append(GitCommit(*parts))
    return tuple(commits), None


class BadCommit(ValueError):
    """``--commit`` names neither a commit id nor a git checkout."""


def resolve_commit(text: str) -> str:
    """The commit id ``--commit`` means: a hex id as given (lower case), or a git checkout's HEAD."""
    path = Path(text).expanduser()
    if path.is_dir():
        commit = head_commit(path)
        if commit is None:
            raise BadCommit(f"--commit {text}: the directory is not a git checkout (git rev-parse HEAD failed)")
        return commit
    lowered = text.strip().lower()
    if 4 <= len(lowered) <= 64 and all(c in "0123456789abcdef" for c in lowered):
        return lowered
    raise BadCommit(f"--commit {text!r}: not a commit id (4 to 64 hex digits) nor a git checkout directory")


def build_tree_commit(kernel_spec: str | None) -> str | None:
    """HEAD of the git checkout a ``--kernel`` build tree (or an image inside one) lives in, if any."""
    if not kernel_spec or kernel_spec.startswith("deb:"):
        return None
    path = Path(kernel_spec).expanduser()
    if path.is_file():
        path = path.parent
    return head_commit(path) if path.is_dir() else None


def head_commit(directory: Path) -> str | None:
    try:
        proc = git.run(directory, "rev-parse", "--verify", "HEAD^{commit}", timeout=git.QUICK_S)
    except git.GitError:
        return None
    commit = proc.stdout.strip()
    return commit if proc.returncode == 0 and commit else None
