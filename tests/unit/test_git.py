"""kbench's one git wrapper (kbench.git) in a real repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kbench import git


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    for key, value in (("user.name", "Kay Bench"), ("user.email", "kay@example.org")):
        subprocess.run(["git", "-C", str(tmp_path), "config", key, value], check=True)
    (tmp_path / "a").write_text("1\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "a"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "commit", "-q", "-m", "first"], check=True)
    return tmp_path


def test_output_is_what_git_prints(repo: Path) -> None:
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert git.output(repo, "rev-parse", "HEAD", timeout=git.QUICK_S) == head
    assert git.output(None, "rev-parse", "HEAD", timeout=git.QUICK_S, cwd=repo) == head


def test_a_refusal_names_the_command_the_place_and_what_git_said(repo: Path) -> None:
    with pytest.raises(git.GitError, match=rf"^git rev-parse --verify nosuch in {repo}: fatal: Needed a single"):
        git.output(repo, "rev-parse", "--verify", "nosuch", timeout=git.QUICK_S)
    refused = git.run(repo, "rev-parse", "--verify", "nosuch", timeout=git.QUICK_S)
    assert refused.returncode != 0 and git.said(refused).startswith("fatal:")


def test_running_out_of_time_is_a_git_error(repo: Path) -> None:
    with pytest.raises(git.GitError, match="timed out") as raised:
        git.run(repo, "log", timeout=1e-9)
    assert isinstance(raised.value.__cause__, subprocess.TimeoutExpired)


def test_the_bounds_grow_with_what_is_asked() -> None:
    assert git.QUICK_S < git.LOG_S < git.WATCH_S < git.NETWORK_S and git.UNBOUNDED is None
