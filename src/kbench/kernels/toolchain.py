"""The compiler a kernel is built with: its identity (part of the built-kernel cache's key)
and ccache when it is installed."""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass

from kbench import children
from kbench.kernels.errors import KernelBuildError

COMPILER = "gcc"
LINKER = "ld"


@dataclass(frozen=True)
class Toolchain:
    """``identity``: the first lines of ``gcc --version`` and ``ld --version``; ``make_args``:
    the ``CC=`` make needs (ccache in front of the compiler when it is installed)."""

    identity: str
    make_args: tuple[str, ...]
    ccache: bool


@functools.cache
def toolchain() -> Toolchain:
    versions = [_first_line(tool) for tool in (COMPILER, LINKER)]
    ccache = shutil.which("ccache") is not None
    return Toolchain("; ".join(versions), (f"CC=ccache {COMPILER}",) if ccache else (), ccache)


def _first_line(tool: str) -> str:
    if shutil.which(tool) is None:
        raise KernelBuildError(f"{tool} is not installed: building a kernel needs build-essential")
    proc = children.run([tool, "--version"], capture_output=True, text=True, timeout=30)
    lines: list[str] = str(proc.stdout).strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise KernelBuildError(f"`{tool} --version` failed: {proc.stderr.strip() or proc.returncode}")
    return lines[0]
