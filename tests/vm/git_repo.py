"""The git repositories the VM tests generate (standing for kernel trees and module sources)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def new_repo(path: Path) -> None:
    """An empty repository in the existing directory ``path``, on branch main, committing as Kay Bench."""
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", "Kay Bench")
    git(path, "config", "user.email", "kay@example.org")
