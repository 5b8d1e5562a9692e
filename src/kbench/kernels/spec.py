"""The kernel spec ``tree:PATH[@REV]``: a kernel tree kbench builds before booting it.

``tree:~/linux@HEAD~1`` is the commit HEAD~1 of the repository at ~/linux;
``tree:~/linux`` is the directory as it stands (uncommitted changes included). A path
that itself holds an ``@`` is read whole when it names a directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kbench.kernels.errors import KernelSourceError

PREFIX = "tree:"


@dataclass(frozen=True)
class TreeSpec:
    path: Path
    rev: str | None


def is_tree_spec(spec: str) -> bool:
    return spec.startswith(PREFIX)


def parse_tree_spec(spec: str) -> TreeSpec:
    """``tree:PATH[@REV]`` read; KernelSourceError when PATH or REV is empty."""
    if not is_tree_spec(spec):
        raise KernelSourceError(f"{spec!r} is not a tree: kernel spec (tree:PATH[@REV])")
    body = spec[len(PREFIX):]
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
