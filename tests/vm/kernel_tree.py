"""Debian's linux-source-6.1 as a git repository, for the tests that build kernels from source.

Made once and kept under kbench's cache directory, keyed by the tarball's size and mtime
(another linux-source package makes another repository); commits have fixed authors and
dates, so every session makes the same commits, the same tree ids, and finds the kernels
an earlier session built in the cache of built kernels. The tarball's top-level
``.gitignore`` ignores ``/*``: files are added with ``git add -f``.

Branches: ``main`` is the tarball (``main~1``) and a commit that makes ``getppid()`` call
``task_tgid_vnr()`` ten times (``main``); ``broken`` is the tarball and a commit with a
syntax error in kernel/sys.c (``broken_line``).

``series`` (``series_repo``, added to a repository made before it existed) is six commits on
the tarball, for bisect and watch of kernel commits: comments appended to kernel/sys.c (1, 2,
6), a lost semicolon in ``getppid()`` (3, which does not build), the semicolon back (4), and
``getppid()`` looking its parent up forty times (5, the culprit: about +300 % under TCG; four
lookups, +25 %, were lost in CI's noise: one boot's median differs from the next by up to 2x
under load, and a check of 20+20 trials saw -20 % [-26 %, +42 %]).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

from kbench.cachefiles import default_cache_dir, locked
from tests.kernel_source import SOURCE_TARBALL

GETPPID = """SYSCALL_DEFINE0(getppid)
{
	int pid;

	rcu_read_lock();
	pid = task_tgid_vnr(rcu_dereference(current->real_parent));
	rcu_read_unlock();

	return pid;
}
"""
SLOWER_GETPPID = """SYSCALL_DEFINE0(getppid)
{
	int pid, i;

	rcu_read_lock();
	for (i = 0; i < 10; i++) {
		pid = task_tgid_vnr(rcu_dereference(current->real_parent));
		barrier();
	}
	rcu_read_unlock();

	return pid;
}
"""
PLANTED_GETPPID = SLOWER_GETPPID.replace("i < 10", "i < 40")
"""The series' culprit: forty lookups instead of one."""
BROKEN_GETPPID = GETPPID.replace("	rcu_read_unlock();\n", "	rcu_read_unlock()\n")
"""The statement before ``return`` loses its semicolon."""
_ENV = {"GIT_AUTHOR_NAME": "Kay Bench", "GIT_AUTHOR_EMAIL": "kay@example.org", "GIT_COMMITTER_NAME": "Kay Bench",
        "GIT_COMMITTER_EMAIL": "kay@example.org", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "core.compression=0", *args], check=True,
                          capture_output=True, text=True, env={**os.environ, **_ENV}).stdout.strip()


def linux_repo() -> Path:
    """The repository (made on first use; later sessions find it)."""
    assert SOURCE_TARBALL.exists(), "install linux-source-6.1 (scripts/install-deps.sh --test does)"
    stat = SOURCE_TARBALL.stat()
    home = default_cache_dir() / "tests" / f"linux-source-6.1-repo-{stat.st_size}-{stat.st_mtime_ns}"
    repo = home / "linux"
    with locked(home.with_name(home.name + ".lock")):
        if (home / "ready").is_file():
            return repo
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        with tarfile.open(SOURCE_TARBALL) as tar:
            top = tar.next()
            assert top is not None
            tar.extractall(home, filter="tar")
        (home / top.name.split("/")[0]).rename(repo)
        sys_c = repo / "kernel" / "sys.c"
        assert sys_c.read_text().count(GETPPID) == 1
        git(repo, "init", "-q", "-b", "main")
        git(repo, "add", "-f", ".")
        git(repo, "commit", "-q", "-m", "linux-source-6.1")
        _commit(repo, sys_c, SLOWER_GETPPID, "getppid: look the parent up ten times")
        git(repo, "checkout", "-q", "-b", "broken", "main~1")
        _commit(repo, sys_c, BROKEN_GETPPID, "getppid: lose a semicolon")
        git(repo, "checkout", "-q", "main")
        (home / "ready").write_text("")
    return repo


SERIES = ("sys: a comment", "sys: another comment", "getppid: lose a semicolon", "getppid: the semicolon back",
          "getppid: look the parent up forty times", "sys: a last comment")
"""The subjects of ``series``' commits, oldest first: the culprit is the fifth, the third does not build."""
CULPRIT, BROKEN = 4, 2


def series_repo() -> tuple[Path, list[str]]:
    """The repository with its ``series`` branch (made on first use) and the branch's commits after
    the tarball (``main~1``), oldest first (the same shas in every session: fixed dates)."""
    repo = linux_repo()
    with locked(repo.parent.with_name(repo.parent.name + ".series.lock")):
        made = subprocess.run(["git", "-C", str(repo), "log", "--format=%s", "main~1..refs/heads/series"],
                              capture_output=True, text=True)
        if made.returncode != 0 or made.stdout.split("\n")[::-1][1:] != list(SERIES):
            _make_series(repo)  # none yet, or an older series
    return repo, git(repo, "rev-list", "--reverse", "main~1..series").split()


def _make_series(repo: Path) -> None:
    """``series`` in a worktree of its own (the repository's checkout stays on main)."""
    work = repo.parent / "series-worktree"
    shutil.rmtree(work, ignore_errors=True)
    git(repo, "worktree", "prune")
    git(repo, "worktree", "add", "-q", "-b", "series-wip", str(work), "main~1")
    try:
        sys_c = work / "kernel" / "sys.c"
        steps = [("append", "1"), ("append", "2"), ("replace", BROKEN_GETPPID), ("restore", ""),
                 ("replace", PLANTED_GETPPID), ("append", "6")]
        for (what, arg), subject in zip(steps, SERIES, strict=True):
            text = sys_c.read_text()
            if what == "append":
                text += f"/* kbench test series: comment {arg} */\n"
            elif what == "replace":
                text = text.replace(GETPPID, arg)
            else:
                text = text.replace(BROKEN_GETPPID, GETPPID)
            sys_c.write_text(text)
            git(work, "add", "-f", "kernel/sys.c")
            git(work, "commit", "-q", "-m", subject)
        git(repo, "branch", "-f", "series", "series-wip")
    finally:
        git(repo, "worktree", "remove", "--force", str(work))
        git(repo, "branch", "-D", "series-wip")


def broken_line(repo: Path) -> int:
    """The line of kernel/sys.c on ``broken`` that lost its semicolon."""
    lines = git(repo, "show", "broken:kernel/sys.c").splitlines()
    (number,) = [i + 1 for i, line in enumerate(lines) if line == "	rcu_read_unlock()"]
    return number


def _commit(repo: Path, path: Path, getppid: str, message: str) -> None:
    path.write_text(path.read_text().replace(GETPPID, getppid))
    git(repo, "add", "-f", str(path.relative_to(repo)))
    git(repo, "commit", "-q", "-m", message)
