"""The git side of a watch: branch heads, first-parent history, force-pushes, reverts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kbench.git import WATCH_S, GitError, output, run

_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,64})", re.I)
__all__ = ["GitError", "git"]  # GitError is kbench.git's, named here for the watch's callers


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s output within the watch's bound (``kbench.git.WATCH_S``); GitError otherwise."""
    return output(repo, *args, timeout=WATCH_S)


def check_repository(repo: Path) -> Path:
    """The top directory of the git repository at ``repo`` (GitError if it is none)."""
    return Path(git(repo, "rev-parse", "--show-toplevel").strip() or repo)


def resolve(repo: Path, rev: str) -> str | None:
    """The full commit id ``rev`` names, or None."""
    proc = run(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", timeout=WATCH_S)
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and sha else None


def first_parent_after(repo: Path, start: str | None, head: str) -> list[str]:
    """Commits on ``head``'s first-parent line that ``start`` does not reach, oldest first
    (the whole first-parent line when ``start`` is None)."""
    args = ["rev-list", "--first-parent", "--reverse", head]
    if start is not None:
        args.append(f"^{start}")
    return git(repo, *args).split()


def is_ancestor(repo: Path, older: str, newer: str) -> bool:
    proc = run(repo, "merge-base", "--is-ancestor", older, newer, timeout=WATCH_S)
    return proc.returncode == 0


def merge_base(repo: Path, one: str, other: str) -> str | None:
    proc = run(repo, "merge-base", one, other, timeout=WATCH_S)
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and sha else None


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parent: str | None  # the first parent
    subject: str
    author: str  # "name <email>" as git shows it: text, never an address (see author_name, author_email)
    date: str
    body: str
    author_name: str = ""
    author_email: str = ""

    def reverted(self) -> list[str]:
        """The commits this one says it reverts (``This reverts commit <sha>.``)."""
        return [m.lower() for m in _REVERTS.findall(self.body)]


def commit_info(repo: Path, sha: str) -> CommitInfo:
    out = git(repo, "log", "-1", "--format=%H%x00%P%x00%s%x00%an%x00%ae%x00%aI%x00%B", sha)
    full, parents, subject, name, email, date, body = out.split("\0", 6)
    first_parent = parents.split()[0] if parents.split() else None
    return CommitInfo(sha=full.strip(), parent=first_parent, subject=subject, author=f"{name} <{email}>",
                      date=date, body=body, author_name=name, author_email=email)


def fetch(repo: Path) -> str | None:
    """``git fetch --prune`` (all remotes); None, or why it failed."""
    try:
        git(repo, "fetch", "--prune", "--quiet", "--all")
    except GitError as exc:
        return str(exc)
    return None
