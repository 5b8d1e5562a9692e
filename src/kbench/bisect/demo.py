"""A repository to try a bisection on: a small C program whose hot loop gets slower at one commit.

``make_demo_repo`` writes commits 0..N-1 of ``prog.c`` (commit 0 the good one): from
``culprit`` on, the loop does ``extra`` more work; commit ``broken`` alone does not
compile; the others touch a comment. ``kbench bisect demo DIR`` makes one and prints the
command that bisects it; the end-to-end tests bisect the same repositories.
"""

from __future__ import annotations

from pathlib import Path

from kbench import git

PROGRAM = """\
#include <stdio.h>

/* {comment} */
#define LOOPS {loops}L
#define TAG {tag}

int main(void)
{{
	volatile unsigned long x = TAG;
	for (long i = 0; i < LOOPS; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	printf("%lu\\n", (unsigned long)x);
	return 0{broken};
}}
"""
BUILD = "cc -O1 -o prog prog.c"
COMMAND = "./prog"
LOOPS = 12_000_000  # 15-25 ms on the machines kbench is developed on


def _git(repo: Path, *args: str) -> str:
    return git.output(repo, *args, timeout=git.QUICK_S).strip()


def make_demo_repo(
    repo: Path, *, commits: int = 20, culprit: int | None = 13, broken: int | None = 9, extra: float = 0.05,
    loops: int = LOOPS,
) -> list[str]:
    """Write the repository (module docstring) into ``repo``; its commit ids, oldest first.
    ``loops``: the hot loop's steps before the culprit (``LOOPS``: 15-25 ms here)."""
    if commits < 2:
        raise ValueError(f"a bisection needs at least 2 commits, got {commits}")
    for name, index in (("culprit", culprit), ("broken", broken)):
        if index is not None and not 0 < index < commits:
            raise ValueError(f"{name} must be a commit after the first and up to the last (1..{commits - 1})")
    if repo.exists() and any(repo.iterdir()):
        raise ValueError(f"{repo} exists and is not empty")
    repo.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "Kay Bench")
    _git(repo, "config", "user.email", "kay@example.org")
    shas = []
    for k in range(commits):
        steps = loops + (int(loops * extra) if culprit is not None and k >= culprit else 0)
        what = ("more work in the hot loop" if k == culprit else
                "break the build" if k == broken else f"touch the comment ({k})")
        source = PROGRAM.format(comment=f"revision {k}", loops=steps, tag=7 + k % 3,
                                broken=" +" if k == broken else "")
        (repo / "prog.c").write_text(source)
        _git(repo, "add", "prog.c")
        _git(repo, "commit", "-q", "-m", f"step {k}: {what}")
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return shas
