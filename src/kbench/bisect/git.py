"""The git side: resolve commits, the ancestry path, commit metadata, worktrees.

Commits are checked out with ``git worktree add --detach`` into a directory of kbench's
own (one worktree per measured commit), so the user's checkout is never touched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kbench.bisect.driver import BisectError
from kbench.git import UNBOUNDED, run


def git(repo: Path, *args: str) -> str:
    """``git -C repo ARGS``'s output (``kbench.git.run``, unbounded: checkouts take as long as the
    tree); BisectError with what git said when it refuses."""
    proc = run(repo, *args, timeout=UNBOUNDED)
    if proc.returncode != 0:
        raise BisectError(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def resolve(repo: Path, rev: str) -> str:
    """The full commit id of ``rev``."""
    try:
        return git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
    except BisectError:
        raise BisectError(f"{rev!r} is not a commit in {repo}") from None


def ancestry_path(repo: Path, good: str, bad: str) -> list[str]:
    """Commits after ``good`` up to ``bad`` that descend from good, oldest first."""
    if good == bad:
        raise BisectError("the good and the bad commit are the same commit")
    proc = run(repo, "merge-base", "--is-ancestor", good, bad, timeout=UNBOUNDED)
    if proc.returncode != 0:
        raise BisectError(f"good commit {good[:12]} is not an ancestor of bad commit {bad[:12]}")
    return git(repo, "rev-list", "--ancestry-path", "--topo-order", "--reverse", f"{good}..{bad}").split()


def describe(repo: Path, commit: str) -> dict[str, str]:
    sha, subject, author = git(repo, "log", "-1", "--format=%H%x00%s%x00%an <%ae>", commit).rstrip("\n").split("\0")
    return {"sha": sha, "subject": subject, "author": author}


class Worktrees:
    """One detached worktree per commit under ``root``."""

    def __init__(self, repo: Path, root: Path):
        self.repo = repo
        self.root = root

    def path(self, commit: str) -> Path:
        return self.root / commit[:12]

    def add(self, commit: str) -> Path:
        """A fresh worktree of ``commit`` (a leftover one from a killed run is replaced)."""
        path = self.path(commit)
        if path.exists():
            self.remove(commit)
        self.root.mkdir(parents=True, exist_ok=True)
        git(self.repo, "worktree", "add", "--detach", "--force", str(path), commit)
        return path

    def remove(self, commit: str) -> None:
        path = self.path(commit)
        run(self.repo, "worktree", "remove", "--force", str(path), timeout=UNBOUNDED)
        shutil.rmtree(path, ignore_errors=True)
        run(self.repo, "worktree", "prune", timeout=UNBOUNDED)

    def remove_all(self) -> None:
        if self.root.exists():
            for child in sorted(self.root.iterdir()):
                run(self.repo, "worktree", "remove", "--force", str(child), timeout=UNBOUNDED)
            shutil.rmtree(self.root, ignore_errors=True)
        run(self.repo, "worktree", "prune", timeout=UNBOUNDED)
