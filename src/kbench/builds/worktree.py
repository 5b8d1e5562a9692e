"""Build a commit in a worktree of kbench's own with the user's build command.

Each commit gets ``<root>/<sha12>`` (``git worktree add --detach``); the build command
runs there with ``/bin/sh -c``. A build that fails gives one line naming the compiler
error (``kbench.bisect.labkit.run_build_command``), and its worktree goes. The worktree of
a build that worked stays until ``remove``: the job runs in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kbench.bisect.driver import BisectError
from kbench.bisect.git import Worktrees
from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S, run_build_command


@dataclass(frozen=True)
class Build:
    """A commit built: its worktree."""

    commit: str
    path: Path


class Builder:
    """Builds commits of ``repo`` into worktrees under ``root``."""

    def __init__(self, repo: Path, root: Path, command: str, *, timeout_s: float = DEFAULT_BUILD_TIMEOUT_S):
        self.worktrees = Worktrees(repo, root)
        self.command = command
        self.timeout_s = timeout_s
        self._built: dict[str, Build] = {}

    def build(self, commit: str) -> Build | str:
        """The build of ``commit``, or one line saying why it did not build (or check out)."""
        if commit in self._built and self._built[commit].path.is_dir():
            return self._built[commit]
        try:
            path = self.worktrees.add(commit)
        except BisectError as exc:
            return f"checkout failed: {str(exc).splitlines()[0]}"
        error = run_build_command(self.command, path, timeout_s=self.timeout_s)
        if error is not None:
            self.worktrees.remove(commit)
            return error
        built = Build(commit, path)
        self._built[commit] = built
        return built

    def remove(self, commit: str) -> None:
        self._built.pop(commit, None)
        self.worktrees.remove(commit)

    def remove_all(self) -> None:
        self._built.clear()
        self.worktrees.remove_all()
