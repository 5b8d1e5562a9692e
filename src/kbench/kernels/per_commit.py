"""Each commit of a kernel tree built by kbench: what ``bisect --kernel-tree`` and ``watch --kernel-tree`` boot.

A commit's kernel is ``tree:REPO@SHA``, built (``build_kernel``) with one recipe for every
commit: the minimal config with kbench's options for a probe or kbench.ko benchmark
(``DEFAULT_FEATURES``, as ``kbench kernel build`` and ``kbench run --kernel tree:…`` make it),
so that a kernel one of them built is the same entry of the cache of built kernels. All
commits build in kbench's one workspace of the tree and recipe: each builds incrementally on
the objects the last one left, and the user's checkout is never touched.

``config_line`` says how a commit's ``.config`` relates to its parent's, for the regression
mail and the report entry of a watch of such a tree: ``kernel config: 3f2a9c0d1e4b, 0 options
differ from the parent's``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kbench.cachefiles import default_cache_dir
from kbench.kernels.errors import KernelBuildError, KernelError
from kbench.kernels.requirements import DEFAULT_FEATURES

if TYPE_CHECKING:
    from kbench.kernels.recipe import ConfigRecipe

TREE_IMAGE = "tree:"
"""The ``image`` (``--kernel-from-build``'s place) of a bisection or watch whose kernels kbench builds:
each commit's kernel is ``tree:REPO@SHA``."""
COMMIT_FEATURES = DEFAULT_FEATURES
"""What every commit's kernel is configured for (kbench.ko's options included, whatever is measured)."""


def commit_spec(repo: Path, sha: str) -> str:
    """The kernel spec of ``sha``'s kernel: ``tree:REPO@SHA``."""
    return f"tree:{repo}@{sha}"


def commit_recipe() -> ConfigRecipe:
    """The one recipe every commit's kernel is built with."""
    from kbench.kernels.recipe import MINIMAL, make_recipe

    return make_recipe(MINIMAL, (), COMMIT_FEATURES)


def build_failure(exc: KernelError) -> str:
    """Why a commit did not build, in one line: the first compiler error with its file and line
    (``kernel/sys.c:974: error: expected ';' before 'return'``), else the error's first line.
    Bisect marks the commit ``skip`` with ``build failed: <it>``, and watch writes the same words."""
    first = exc.first_error if isinstance(exc, KernelBuildError) else None
    return first or (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def config_line(repo: Path, sha: str, cache_dir: Path | None = None) -> str | None:
    """``kernel config: DIGEST, N options differ from the parent's`` for a commit whose kernel and its
    parent's kbench built (found in the cache; None when either is not there)."""
    from kbench.kernels.build import find_built
    from kbench.kernels.diffconfig import diff_configs

    cache_dir = cache_dir or default_cache_dir()
    try:
        recipe = commit_recipe()
        culprit = find_built(repo, sha, recipe, cache_dir=cache_dir)
        parent = find_built(repo, f"{sha}^", recipe, cache_dir=cache_dir)
        if culprit is None or parent is None:
            return None
        count = diff_configs(parent.config.read_text(), culprit.config.read_text()).count
    except (KernelError, OSError):
        return None
    return (f"kernel config: {culprit.config_digest[:12]}, {count} option{'' if count == 1 else 's'} differ"
            f"{'s' if count == 1 else ''} from the parent's")
