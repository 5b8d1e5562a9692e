"""A kernel kbench built, as the cache keeps it and as every command reports it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kbench.kernels.source import SourceTree

MARKER = "built.json"
"""The file that makes a cache entry complete (written last)."""


@dataclass(frozen=True)
class BuiltKernel:
    """``image`` is the bzImage, ``config`` its ``.config`` (``config_digest`` its SHA-256),
    ``kbuild_dir`` the kit modules build against, ``modules_dir`` its ``lib/modules/RELEASE``
    (None without modules), ``build_dir`` kbench's incremental build directory it was built
    in (it moves on with later builds), ``log`` the build's log. ``from_cache``: this call
    built nothing. ``durations`` (seconds) are those of the build that made it, and
    ``lookup_s`` the time this call took to find it."""

    key: str
    release: str
    image: Path
    config: Path
    config_digest: str
    kbuild_dir: Path
    modules_dir: Path | None
    build_dir: Path
    log: Path
    tree: Path
    rev: str | None
    commit: str | None
    tree_id: str
    recipe: str
    recipe_digest: str
    compiler: str
    build_id: str | None
    built_at: str
    durations: dict[str, float] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    """Options the user's fragments set otherwise than the base or kbench's own fragment."""
    from_cache: bool = False
    lookup_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {name: str(value) if isinstance(value, Path) else value for name, value in data.items()}

    def for_source(self, source: SourceTree, recipe: str, lookup_s: float) -> BuiltKernel:
        """This entry as found for ``source`` (the same tree id, maybe asked by another commit or path)
        and the recipe asked (the same digest, described in today's words)."""
        return replace(self, tree=source.path, rev=source.rev, commit=source.commit, recipe=recipe, from_cache=True,
                       lookup_s=lookup_s)


def write_marker(entry: Path, kernel: BuiltKernel) -> None:
    data = kernel.to_json()
    for name in ("image", "config", "kbuild_dir", "modules_dir", "log"):
        if data[name] is not None:
            data[name] = str(Path(data[name]).relative_to(entry))
    partial = entry / f"{MARKER}.tmp"
    partial.write_text(json.dumps(data, indent=2) + "\n")
    partial.replace(entry / MARKER)


def read_marker(entry: Path) -> BuiltKernel | None:
    """The entry at ``entry`` if it is complete (its marker and files there), else None."""
    try:
        data = json.loads((entry / MARKER).read_text())
        kernel = BuiltKernel(
            **{**data, **{name: entry / data[name] for name in ("image", "config", "kbuild_dir", "log")},
               "modules_dir": entry / data["modules_dir"] if data.get("modules_dir") else None,
               "warnings": tuple(data.get("warnings") or ()),
               "build_dir": Path(data["build_dir"]), "tree": Path(data["tree"])})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if not (kernel.image.is_file() and kernel.config.is_file() and kernel.kbuild_dir.is_dir()):
        return None
    return kernel
