"""Kernel resolution: turn a spec (``deb:<release>`` or a path) into a KernelImage."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

from .errors import KernelResolveError


@dataclass(frozen=True)
class KernelImage:
    """A bootable kernel and what belongs to it, all as host paths.

    ``modules_dir`` is the guest's ``/lib/modules/<release>`` tree (None when the
    kernel has no modules, e.g. a build tree without ``modules_install``);
    ``build_dir`` a kbuild tree usable as ``make -C build_dir M=...`` (None when
    unknown). ``source`` says where it came from (``debian``, ``bzimage``,
    ``build-tree``, ``tree``: built by kbench). ``config`` is its ``.config`` when known;
    ``build_id`` the GNU build ID of its vmlinux, when known; ``built_from`` the tree,
    revision, commit and tree id of a kernel kbench built.
    """

    release: str
    vmlinuz: Path
    modules_dir: Path | None
    build_dir: Path | None
    spec: str
    source: str
    config: Path | None = None
    build_id: str | None = None
    built_from: dict[str, str | None] | None = None


def resolve_path(
    path: Path,
    *,
    spec: str | None = None,
    kernel_build: Path | None = None,
    modules_dir: Path | None = None,
) -> KernelImage:
    """Resolve a bzImage file or a kernel build tree."""
    spec = spec if spec is not None else str(path)
    if not path.exists():
        raise KernelResolveError(f"kernel {spec!r}: no such file or directory: {path}")
    if path.is_dir():
        image = path / "arch" / "x86" / "boot" / "bzImage"
        if not image.is_file():
            raise KernelResolveError(f"kernel build tree {path}: arch/x86/boot/bzImage not found (run `make` there)")
        if kernel_build is None:
            kernel_build = path
        source = "build-tree"
    else:
        image = path
        source = "bzimage"
    release = bzimage_release(image)
    if kernel_build is not None:
        kernel_build = kernel_build.resolve()
        if not (kernel_build / "Makefile").is_file():
            raise KernelResolveError(f"kernel build dir {kernel_build}: no Makefile")
        built = _tree_release(kernel_build)
        if built is not None and built != release:
            raise KernelResolveError(f"kernel build dir {kernel_build} is for {built}, but {image} is {release}")
    if modules_dir is not None:
        modules_dir = modules_dir.resolve()
        if (modules_dir / "lib" / "modules" / release).is_dir():
            modules_dir = modules_dir / "lib" / "modules" / release
        if not modules_dir.is_dir():
            raise KernelResolveError(f"modules dir {modules_dir}: not a directory")
    config = kernel_build / ".config" if kernel_build is not None else None
    return KernelImage(
        release=release,
        vmlinuz=image.resolve(),
        modules_dir=modules_dir,
        build_dir=kernel_build,
        spec=spec,
        source=source,
        config=config if config is not None and config.is_file() else None,
    )


def bzimage_release(image: Path) -> str:
    """The kernel release string stored in a bzImage's setup header."""
    try:
        with open(image, "rb") as f:
            head = f.read(0x10000)
    except OSError as e:
        raise KernelResolveError(f"cannot read kernel image {image}: {e.strerror}") from e
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
        raise KernelResolveError(f"{image} is not an x86 bzImage (no HdrS setup header)")
    (version_off,) = struct.unpack_from("<H", head, 0x20E)
    start = version_off + 0x200
    raw = head[start : start + 256].split(b"\0", 1)[0].decode("ascii", "replace")
    release = raw.split(" ", 1)[0]
    if not release:
        raise KernelResolveError(f"{image}: no kernel version string in the setup header")
    return release


def _tree_release(build_dir: Path) -> str | None:
    # utsrelease.h first: Debian's headers put the upstream version in kernel.release
    uts = build_dir / "include" / "generated" / "utsrelease.h"
    if uts.is_file():
        m = re.search(r'UTS_RELEASE\s+"([^"]+)"', uts.read_text())
        if m:
            return m.group(1)
    header = build_dir / "include" / "config" / "kernel.release"
    if header.is_file():
        return header.read_text().strip()
    return None
