"""Build a user's benchmark module (one .c file or a Kbuild directory) for a kernel.

The module includes kbench.h and calls kbench_register(), so it is built against the
kbench.ko built for the same kernel (its Module.symvers resolves the symbols). A VM
target builds the modules it is given as sources before it boots (``kbench run --module``).
"""

from __future__ import annotations

import re
from pathlib import Path

from kbench import children
from kbench.resources import find_resource

from .errors import ModuleBuildError
from .kernel import KernelImage
from .modbuild import build_module

SUFFIX = re.compile(r"^[a-z0-9_]{1,16}$")


def kbench_ko_for(kernel: KernelImage, cache_dir: Path) -> Path:
    """kbench.ko built for ``kernel`` (cached by content)."""
    built = build_module(find_resource("kmod"), kernel, cache_dir)
    for path in built:
        if path.name == "kbench.ko":
            return path
    raise ModuleBuildError(f"building kmod/ for {kernel.release} produced no kbench.ko")


def build_user_module(source: Path, kernel: KernelImage, cache_dir: Path, suffix: str | None = None) -> Path:
    """Build ``source`` (``NAME.c``, or a directory with a Kbuild/Makefile) for ``kernel``.

    Returns the one .ko it produces. ``kbench.h`` is on the include path and kbench.ko's
    exported symbols are known to modpost. ``suffix`` (``[a-z0-9_]+``): the module is
    called NAME + suffix and registers its benchmarks under their names + suffix
    (``KBENCH_NAME_SUFFIX``, see kbench.h), so that two versions of one module load at once.
    """
    if suffix is not None and not SUFFIX.match(suffix):
        raise ModuleBuildError(f"module name suffix {suffix!r}: expected [a-z0-9_]+")
    kbench_ko = kbench_ko_for(kernel, cache_dir)
    symvers = kbench_ko.parent / "Module.symvers"
    include = find_resource("kmod") / "include"
    flags = f"-I{include}" + (f" -DKBENCH_NAME_SUFFIX='\"{suffix}\"'" if suffix else "")
    make_args = [f"KBUILD_EXTRA_SYMBOLS={symvers}", f"KCFLAGS={flags}"]
    source = source.resolve()
    if source.is_file():
        if source.suffix != ".c":
            raise ModuleBuildError(f"{source}: expected a .c file or a module directory")
        name = source.stem + (suffix or "")
        with children.scratch_dir("kbench-kmod-") as tmp:
            work = tmp / name
            work.mkdir()
            (work / f"{name}.c").write_bytes(source.read_bytes())
            (work / "Kbuild").write_text(f"obj-m += {name}.o\n")
            built = build_module(work, kernel, cache_dir, make_args=make_args)
    elif source.is_dir():
        built = build_module(source, kernel, cache_dir, make_args=make_args)
    else:
        raise ModuleBuildError(f"{source}: no such file or directory")
    if len(built) != 1:
        raise ModuleBuildError(f"building {source} produced {len(built)} modules, expected one: {built}")
    return built[0]
