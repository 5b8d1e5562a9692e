"""Pick the target a command asked for: the running kernel or a kernel in qemu."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from kbench.targets.base import Target
from kbench.targets.local import LocalTarget


@contextmanager
def make_target(kernel: str | None, modules: Sequence[Path] = ()) -> Iterator[Target]:
    """``None`` or ``local``: this kernel. Anything else: a VmTarget, powered off on exit.

    ``modules``: user benchmark modules (sources or .ko) to load next to kbench.ko.
    """
    if kernel is None or kernel == "local":
        yield LocalTarget()
        return
    from kbench.targets.vm_target import VmTarget

    with VmTarget(kernel, extra_modules=modules) as target:
        yield target
