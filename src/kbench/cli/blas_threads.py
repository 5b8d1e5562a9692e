"""numpy loaded with one OpenBLAS thread, without passing that on to the processes kbench starts.

numpy's OpenBLAS starts a thread per CPU as it loads, which costs about 60 ms of CPU on
every command that imports numpy (``show``, ``history``, ``compare --runs``: issue 36), and
kbench calls no BLAS routine (no matrix products, no linear algebra), so the threads never
work. The thread count is read from the environment once, when the library loads: so while
numpy's package runs its import, ``OPENBLAS_NUM_THREADS=1`` is set, and removed again after,
so that a measured command (``kbench run command -- ...``) and every other child gets the
environment the user gave. A thread count the user set (OPENBLAS_NUM_THREADS,
GOTO_NUM_THREADS or OMP_NUM_THREADS) is left as it is.
"""

from __future__ import annotations

import importlib.machinery  # not importlib.abc: that costs every command ~6 ms (importlib.resources)
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Loader

VARIABLE = "OPENBLAS_NUM_THREADS"
USER_SETTINGS = (VARIABLE, "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


class _OneThreadLoader:
    """numpy's own loader, run with the variable set."""

    def __init__(self, loader: Loader) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        os.environ[VARIABLE] = "1"
        try:
            self._loader.exec_module(module)
        finally:
            os.environ.pop(VARIABLE, None)


class _NumpyFinder:
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != "numpy":
            return None
        sys.meta_path.remove(self)  # once: numpy's own finder answers from here on
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _OneThreadLoader(spec.loader)  # type: ignore[assignment]
        return spec


def load_numpy_with_one_thread() -> None:
    """Have numpy's first import load OpenBLAS with one thread (see the module's text); nothing
    when numpy is loaded already or the user chose a thread count."""
    if "numpy" in sys.modules or any(name in os.environ for name in USER_SETTINGS):
        return
    if not any(isinstance(finder, _NumpyFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _NumpyFinder())
