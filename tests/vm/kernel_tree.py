"""Debian's linux-source-6.1 as a git repository, for the tests that build kernels from source.

Made once and kept under kbench's cache directory, keyed by the tarball's size and mtime
(another linux-source package makes another repository); commits have fixed authors and
dates, so every session makes the same commits, the same tree ids, and finds the kernels
an earlier session built in the cache of built kernels. The tarball's top-level
``.gitignore`` ignores ``/*``: files are added with ``git add -f``.

Branches: ``main`` is the tarball (``main~1``) and a commit that makes ``getppid()`` call
``task_tgid_vnr()`` ten times (``main``); ``broken`` is the tarball and a commit with a
syntax error in kernel/sys.c (``broken_line``).
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


def broken_line(repo: Path) -> int:
    """The line of kernel/sys.c on ``broken`` that lost its semicolon."""
    lines = git(repo, "show", "broken:kernel/sys.c").splitlines()
    (number,) = [i + 1 for i, line in enumerate(lines) if line == "	rcu_read_unlock()"]
    return number


def _commit(repo: Path, path: Path, getppid: str, message: str) -> None:
    path.write_text(path.read_text().replace(GETPPID, getppid))
    git(repo, "add", "-f", str(path.relative_to(repo)))
    git(repo, "commit", "-q", "-m", message)
