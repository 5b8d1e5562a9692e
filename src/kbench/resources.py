"""Locate source trees kbench ships besides Python code (kmod/, vm/)."""

from __future__ import annotations

import os
from pathlib import Path


class ResourceMissing(RuntimeError):
    """A source tree kbench needs (e.g. the kbench.ko sources) is not installed."""


def find_resource(name: str) -> Path:
    """The directory ``name`` (``kmod`` or ``vm``).

    Looked up in: ``$KBENCH_<NAME>_DIR``, the repository checkout this package runs
    from (editable installs), then the copy installed in the package (``kbench/_data``).
    """
    env = os.environ.get(f"KBENCH_{name.upper()}_DIR")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise ResourceMissing(f"KBENCH_{name.upper()}_DIR={env} is not a directory")
        return path
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / name, here / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise ResourceMissing(f"kbench's {name}/ sources are not installed; set KBENCH_{name.upper()}_DIR")
