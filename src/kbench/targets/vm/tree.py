"""``tree:PATH[@REV]`` and ``tree:URL@REV`` kernel specs: kbench builds the tree (a URL's clone
in the cache, ``kbench.kernels.remote``) with the minimal config for what will run
(``kbench.kernels``), then it boots like any build tree."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from kbench.kernels.build import build_kernel
from kbench.kernels.built import BuiltKernel
from kbench.kernels.make import BuildProgress
from kbench.kernels.recipe import MINIMAL, ConfigRecipe, make_recipe
from kbench.kernels.remote import cloned
from kbench.kernels.requirements import DEFAULT_FEATURES
from kbench.kernels.spec import parse_tree_spec
from kbench.kernels.terminal import TerminalProgress

from .debian import resolve_debian
from .errors import KernelResolveError
from .kernel import KernelImage


def debian_config(cache_dir: Path) -> Callable[[str], Path]:
    """Where Debian's config of a release is (its image package fetched once into the cache)."""

    def config_of(release: str) -> Path:
        image = resolve_debian(release, cache_dir)
        if image.config is None:
            raise KernelResolveError(f"deb:{release}: its image package holds no boot/config-{release}")
        return image.config

    return config_of


def kernel_recipe(config: str, fragments: Sequence[Path], features: Iterable[str], cache_dir: Path) -> ConfigRecipe:
    """``--config`` and ``--fragment`` as a recipe (``deb:RELEASE`` fetched from Debian)."""
    return make_recipe(config, fragments, features, debian_config=debian_config(cache_dir))


def resolve_tree(spec: str, cache_dir: Path, *, features: Iterable[str] | None = None,
                 progress: BuildProgress | None = None) -> KernelImage:
    """Build (or find built) the kernel of a ``tree:`` spec with the minimal config for
    ``features`` (default: what a probe or kbench.ko benchmark needs)."""
    tree = parse_tree_spec(spec)
    path = tree.path
    if tree.url is not None and tree.rev is not None:  # tree:URL@REV: a clone in the cache (kernels/remote.py)
        path = cloned(tree.url, tree.rev, cache_dir)
    recipe = make_recipe(MINIMAL, (), DEFAULT_FEATURES if features is None else features)
    built = build_kernel(path, tree.rev, recipe, cache_dir=cache_dir, progress=progress or TerminalProgress())
    return built_image(built, spec)


def built_image(built: BuiltKernel, spec: str) -> KernelImage:
    """A kernel kbench built, as the VM target boots it (modules build against its kit)."""
    return KernelImage(
        release=built.release, vmlinuz=built.image, modules_dir=built.modules_dir, build_dir=built.kbuild_dir,
        spec=spec, source="tree", config=built.config, build_id=built.build_id,
        built_from={"tree": str(built.tree), "rev": built.rev, "commit": built.commit, "tree_id": built.tree_id},
    )
