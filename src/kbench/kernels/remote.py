"""A remote kernel repository (``tree:URL@REV``), cloned once into kbench's cache.

The clone is a mirror (every branch and tag of the remote as its own ref) kept in a
directory's ``.git`` with ``core.bare`` off, so that it is a repository with a top
directory like any tree the user names: ``kbench.kernels.source`` resolves revisions in it
and checks them out into a workspace of its own. A revision that does not resolve, or a
branch (which moves), fetches the remote again first; a full commit id already there does
not. Made in a temporary directory and renamed into place, so a killed clone leaves
nothing that looks whole. A URL that carries a credential is refused: it would be kept in
the clone's configuration (and, for a fleet job, in the store).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from kbench import git
from kbench.cachefiles import locked
from kbench.kernels.errors import KernelSourceError

REPOS = "kernel-repos"
_FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def cloned(url: str, rev: str, cache_dir: Path) -> Path:
    """The cache's clone of ``url``, holding ``rev`` (cloned or fetched as needed); KernelSourceError
    when the URL carries a credential, cannot be cloned or fetched, or ``rev`` names no commit there."""
    clean = git.without_credential(url)
    if clean is not None:
        raise KernelSourceError(f"tree:{url}: the URL carries a credential, which would be kept in clear in the clone "
                                f"(and in a fleet job); give tree:{clean}@{rev} and let git authenticate (a credential "
                                "helper, ~/.netrc or an SSH key)")
    top = cache_dir / REPOS / hashlib.sha256(url.encode()).hexdigest()[:16]
    top.parent.mkdir(parents=True, exist_ok=True)
    with locked(top.with_name(top.name + ".lock")):
        if not (top / ".git").is_dir():
            _clone(url, top)
        elif not (_FULL_COMMIT.match(rev) and _has_commit(top, rev)):
            fetched = git.run(top, "fetch", "--quiet", "--update-head-ok", "--prune", "--tags", "origin",
                              timeout=git.NETWORK_S)
            if fetched.returncode != 0:
                raise KernelSourceError(f"tree:{url}: git fetch failed: {git.said(fetched)}")
    if not _has_commit(top, rev):
        raise KernelSourceError(f"tree:{url}@{rev}: {rev!r} names no commit of the repository (fetched now)")
    return top


def _clone(url: str, top: Path) -> None:
    partial = top.with_name(f"{top.name}.part{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    made = git.run(None, "clone", "--quiet", "--mirror", url, str(partial / ".git"), timeout=git.NETWORK_S)
    if made.returncode != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise KernelSourceError(f"tree:{url}: git clone failed: {git.said(made)}")
    git.output(partial, "config", "core.bare", "false", timeout=git.QUICK_S)
    shutil.rmtree(top, ignore_errors=True)  # a clone of an older layout, or one left without its .git
    partial.rename(top)


def _has_commit(top: Path, rev: str) -> bool:
    return git.run(top, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", timeout=git.QUICK_S).returncode == 0
