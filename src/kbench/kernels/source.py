"""Which source a kernel is built from, and a checkout of it that is kbench's own.

A tree is named by a path and, for a git repository, a revision. Its identity is the git
tree object id of the revision (the same content committed twice is one tree), or a
content digest for a directory built as it stands. A revision is checked out in a clone
of kbench's own that shares the repository's objects (``git clone --shared``): the
user's checkout, index and refs are never touched, and moving the clone from one
revision to the next rewrites only the files that differ, so the build after it is
incremental. Files are checked out whatever the tree's ``.gitignore`` says.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

from kbench import git
from kbench.kernels.errors import KernelSourceError
from kbench.kernels.tree_digest import tree_digest


@dataclass(frozen=True)
class SourceTree:
    """A kernel source: ``path`` (the user's tree), ``rev`` as asked, ``tree_id`` (the git tree
    object id, or ``dir-…`` for a directory's content) and ``commit`` (None for a directory)."""

    path: Path
    rev: str | None
    tree_id: str
    commit: str | None

    @property
    def label(self) -> str:
        return f"{self.path}@{self.rev}" if self.rev is not None else str(self.path)


def identify(path: Path, rev: str | None, memo_dir: Path) -> SourceTree:
    """The source ``path`` at ``rev`` (None: the directory as it stands)."""
    path = Path(path).expanduser()
    if not path.is_dir():
        raise KernelSourceError(f"kernel tree {path}: not a directory")
    path = path.resolve()
    if rev is None:
        _check_kernel_tree(path)
        return SourceTree(path, None, tree_digest(path, memo_dir), None)
    top = repository_top(path)
    commit = _resolve(top, f"{rev}^{{commit}}", rev)
    tree = _resolve(top, f"{commit}^{{tree}}", rev)
    return SourceTree(top, rev, tree, commit)


def repository_top(path: Path) -> Path:
    """The top of the git repository holding ``path``; KernelSourceError if there is none."""
    proc = git.run(path, "rev-parse", "--show-toplevel", timeout=git.QUICK_S)
    if proc.returncode != 0:
        raise KernelSourceError(f"kernel tree {path}: --rev needs a git repository ({git.said(proc)})")
    return Path(proc.stdout.strip())


def _resolve(top: Path, expression: str, rev: str) -> str:
    proc = git.run(top, "rev-parse", "--verify", "--quiet", expression, timeout=git.QUICK_S)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise KernelSourceError(f"kernel tree {top}: {rev!r} names no commit")
    return proc.stdout.strip()


def _check_kernel_tree(path: Path) -> None:
    if not (path / "Makefile").is_file() or not (path / "Kconfig").is_file():
        raise KernelSourceError(f"kernel tree {path}: no Makefile and Kconfig at its top (not a kernel source tree)")


def check_out(source: SourceTree, checkout: Path) -> Path:
    """The directory to build ``source`` from: the tree itself for a directory, else
    ``checkout`` (a shared clone made on first use) moved to ``source.commit``."""
    if source.commit is None:
        return source.path
    if not (checkout / ".git").is_dir():
        with contextlib.suppress(FileNotFoundError):
            _remove(checkout)
        checkout.parent.mkdir(parents=True, exist_ok=True)
        git.output(None, "clone", "--quiet", "--shared", "--no-checkout", str(source.path), str(checkout),
                   timeout=git.UNBOUNDED)
    with contextlib.suppress(FileNotFoundError):
        (checkout / ".git" / "index.lock").unlink()  # a checkout killed half-way (we hold the workspace's lock)
    git.output(checkout, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--force", "--detach",
               source.commit, timeout=git.UNBOUNDED)
    git.output(checkout, "clean", "-ffdxq", timeout=git.UNBOUNDED)
    _check_kernel_tree(checkout)
    return checkout


def _remove(path: Path) -> None:
    import shutil

    shutil.rmtree(path)
