"""A kernel bundle: a directory holding a bootable kernel with what belongs to it, described by
``kernel.json``. It is how a kernel travels to a fleet worker (``kbench.fleet.kernels``), and
any kernel spec naming such a directory boots it.

``kernel.json`` (format 1)::

    {"format": 1, "release": "6.1.0-56-amd64", "image": "bzImage", "config": "config",
     "modules_dir": "modules/lib/modules/6.1.0-56-amd64", "kbuild_dir": "kbuild",
     "build_id": "…" | null, "source": "tree" | "bzimage" | "build-tree", "built_from": {…} | null}

Paths are relative to the bundle's directory; ``config``, ``modules_dir`` and ``kbuild_dir``
may be null (a bzImage sent without its modules boots only if the guest's drivers are built in;
without a kbuild kit, modules cannot be built for it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import KernelResolveError
from .kernel import KernelImage, bzimage_release

MANIFEST = "kernel.json"
FORMAT = 1


def is_bundle(path: Path) -> bool:
    return path.is_dir() and (path / MANIFEST).is_file()


def manifest(*, release: str, image: str, config: str | None, modules_dir: str | None, kbuild_dir: str | None,
             build_id: str | None, source: str, built_from: dict[str, Any] | None) -> dict[str, Any]:
    return {"format": FORMAT, "release": release, "image": image, "config": config, "modules_dir": modules_dir,
            "kbuild_dir": kbuild_dir, "build_id": build_id, "source": source, "built_from": built_from}


def read_bundle(path: Path, spec: str) -> KernelImage:
    """The kernel of the bundle at ``path``; KernelResolveError naming what is wrong with it."""
    try:
        data = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise KernelResolveError(f"kernel bundle {path}: {MANIFEST} does not read ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise KernelResolveError(f"kernel bundle {path}: {MANIFEST} is not format {FORMAT}")

    def member(key: str, kind: str) -> Path | None:
        name = data.get(key)
        if name is None:
            return None
        found = (path / str(name)).resolve()
        if not found.is_relative_to(path.resolve()):
            raise KernelResolveError(f"kernel bundle {path}: {key} {name!r} lies outside the bundle")
        if not (found.is_file() if kind == "file" else found.is_dir()):
            raise KernelResolveError(f"kernel bundle {path}: its {key} {name!r} is missing")
        return found

    image = member("image", "file")
    if image is None:
        raise KernelResolveError(f"kernel bundle {path}: {MANIFEST} names no image")
    release = bzimage_release(image)
    if release != data.get("release"):
        raise KernelResolveError(f"kernel bundle {path}: its image is {release}, its {MANIFEST} says "
                                 f"{data.get('release')}")
    built_from = data.get("built_from")
    return KernelImage(
        release=release, vmlinuz=image, modules_dir=member("modules_dir", "dir"), build_dir=member("kbuild_dir", "dir"),
        spec=spec, source=str(data.get("source") or "bundle"), config=member("config", "file"),
        build_id=data.get("build_id"), built_from=dict(built_from) if isinstance(built_from, dict) else None,
    )
