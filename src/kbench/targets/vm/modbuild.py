"""Build an out-of-tree kernel module against a KernelImage's kbuild tree, cached by content."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

from kbench import children
from kbench.cachefiles import Hasher, locked

from .errors import ModuleBuildError
from .kernel import KernelImage

# build products never hashed nor copied from the source directory
_ARTEFACT_SUFFIXES = (".o", ".ko", ".mod", ".mod.c", ".cmd", ".a", ".order", ".symvers", ".d")
_ARTEFACT_NAMES = {"modules.order", "Module.symvers", ".tmp_versions", ".cache.mk"}


def _source_files(src_dir: Path) -> list[Path]:
    files = []
    for dirpath, dirnames, filenames in os.walk(src_dir):
        dirnames[:] = sorted(d for d in dirnames if d not in _ARTEFACT_NAMES and not d.startswith(".git"))
        for name in sorted(filenames):
            if name in _ARTEFACT_NAMES or name.endswith(_ARTEFACT_SUFFIXES) or name.startswith(".#"):
                continue
            files.append(Path(dirpath, name))
    return files


def _build_identity(build_dir: Path, h: Hasher) -> None:
    h.add("build_dir", str(build_dir.resolve()))
    for rel in (".config", "include/generated/utsrelease.h", "include/config/kernel.release"):
        p = build_dir / rel
        if p.is_file():
            h.add_file(rel, p)
    symvers = build_dir / "Module.symvers"
    if symvers.is_file():
        st = symvers.stat()
        h.add("Module.symvers", f"{st.st_size}:{st.st_mtime_ns}")


def kernel_compiler(build_dir: Path) -> str:
    """The C compiler the kernel was built with (e.g. ``gcc-12``), from its .config."""
    config = build_dir / ".config"
    if config.is_file():
        m = re.search(r'^CONFIG_CC_VERSION_TEXT="([^" ]+)', config.read_text(errors="replace"), re.M)
        if m:
            return m.group(1)
    return "gcc"


def _config_enabled(build_dir: Path, option: str) -> bool:
    config = build_dir / ".config"
    if not config.is_file():
        return False
    return re.search(rf"^{option}=[ym]$", config.read_text(errors="replace"), re.M) is not None


def build_module(
    src_dir: Path,
    kernel: KernelImage,
    cache_dir: Path,
    *,
    jobs: int | None = None,
    make_args: Sequence[str] = (),
) -> list[Path]:
    """Build the module(s) in ``src_dir`` for ``kernel``; returns the ``.ko`` files.

    The sources are copied into ``cache_dir/modules/<hash>`` (hash of the sources, the
    kernel release and the build tree's identity) and built there with
    ``make -C build_dir M=<that dir> modules``; a second call with unchanged sources
    returns the cached result at once.
    """
    src_dir = Path(src_dir)
    if not src_dir.is_dir():
        raise ModuleBuildError(f"module source {src_dir}: not a directory")
    if kernel.build_dir is None:
        raise ModuleBuildError(
            f"kernel {kernel.spec} ({kernel.release}) has no kbuild tree: cannot build modules "
            "(for a bzImage pass --kernel-build DIR; Debian kernels need their headers package)"
        )
    files = _source_files(src_dir)
    if not any(f.name in ("Kbuild", "Makefile") for f in files):
        raise ModuleBuildError(f"module source {src_dir}: no Kbuild or Makefile")
    h = Hasher("kbench-module-v1")
    h.add("release", kernel.release)
    _build_identity(kernel.build_dir, h)
    for f in files:
        h.add_file(str(f.relative_to(src_dir)), f)
    for arg in make_args:
        h.add("make-arg", arg)
    key = h.hexdigest()
    out = Path(cache_dir) / "modules" / f"{src_dir.resolve().name}-{key}"
    done = out / ".kbench-built"
    with locked(out.with_name(out.name + ".lock")):
        if done.is_file():
            kos = [out / line for line in done.read_text().splitlines() if line]
            if kos and all(k.is_file() for k in kos):
                return kos
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        for f in files:
            dest = out / f.relative_to(src_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
        cc = kernel_compiler(kernel.build_dir)
        if shutil.which(cc) is None:
            raise ModuleBuildError(
                f"kernel {kernel.release} was built with {cc}, which is not installed (apt-get install {cc})"
            )
        argv = [
            "make",
            "-C",
            str(kernel.build_dir),
            f"M={out}",
            f"-j{jobs or os.cpu_count() or 1}",
            *make_args,
            "modules",
        ]
        if cc != "gcc" and not (kernel.build_dir / ".kernelvariables").is_file():
            argv.insert(1, f"CC={cc}")
        if _config_enabled(kernel.build_dir, "CONFIG_DEBUG_INFO_BTF_MODULES") and shutil.which("pahole") is None:
            # BTF for modules needs pahole (package dwarves); a module without BTF loads fine
            argv.insert(1, "CONFIG_DEBUG_INFO_BTF_MODULES=")
        proc = children.run(argv, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).rstrip().splitlines()[-40:])
            raise ModuleBuildError(
                f"building {src_dir} for {kernel.release} failed (`{' '.join(argv)}`, "
                f"status {proc.returncode}):\n{tail}"
            )
        kos = sorted(out.rglob("*.ko"))
        if not kos:
            raise ModuleBuildError(f"building {src_dir} for {kernel.release} produced no .ko file")
        done.write_text("".join(f"{k.relative_to(out)}\n" for k in kos))
        return kos
