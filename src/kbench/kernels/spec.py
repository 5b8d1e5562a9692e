"""The kernel spec ``tree:PATH[@REV]``: a kernel tree kbench builds before booting it.

``tree:~/linux@HEAD~1`` is the commit HEAD~1 of the repository at ~/linux;
``tree:~/linux`` is the directory as it stands (uncommitted changes included). A path
that itself holds an ``@`` is read whole when it names a directory.

``tree:URL@REV`` names a revision of a remote repository (``https://…``, ``git://…``,
``ssh://…``, ``file://…`` or scp-like ``user@host:path``): kbench clones it into its cache
(``kbench.kernels.remote``) and builds the revision there, so a fleet worker can build a
kernel its submitter named without sharing a file with it. A URL needs its ``@REV``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kbench.kernels.errors import KernelSourceError

PREFIX = "tree:"
_SCP_LIKE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:")


@dataclass(frozen=True)
class TreeSpec:
    path: Path
    rev: str | None
    url: str | None = None
    """A remote repository's URL (``tree:URL@REV``); ``path`` is then its clone in the cache,
    known once ``kbench.kernels.remote.cloned`` made it (``Path()`` until then)."""


def is_remote(location: str) -> bool:
    """Whether a tree's location is a repository URL rather than a path on this machine."""
    return "://" in location or bool(_SCP_LIKE.match(location))


def is_tree_spec(spec: str) -> bool:
    return spec.startswith(PREFIX)


def parse_tree_spec(spec: str) -> TreeSpec:
    """``tree:PATH[@REV]`` or ``tree:URL@REV`` read; KernelSourceError when PATH or REV is empty."""
    if not is_tree_spec(spec):
        raise KernelSourceError(f"{spec!r} is not a tree: kernel spec (tree:PATH[@REV])")
    body = spec[len(PREFIX):]
    if is_remote(body):
        url, _, url_rev = body.rpartition("@")
        if not is_remote(url) or not url_rev:
            raise KernelSourceError(f"kernel spec {spec!r}: a repository URL needs the revision to build "
                                    "(tree:URL@REV, e.g. tree:https://git.kernel.org/…/linux.git@v6.6)")
        return TreeSpec(Path(), url_rev, url)
    whole = Path(body).expanduser()
    if "@" not in body or whole.is_dir():
        path, rev = body, None
    else:
        path, _, rev = body.rpartition("@")
        if not rev:
            raise KernelSourceError(f"kernel spec {spec!r}: nothing after '@' (tree:PATH@REV, e.g. tree:~/linux@HEAD)")
    if not path:
        raise KernelSourceError(f"kernel spec {spec!r}: no tree path (tree:PATH[@REV], e.g. tree:~/linux@HEAD)")
    return TreeSpec(Path(path).expanduser(), rev)
