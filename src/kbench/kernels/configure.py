"""Making a build directory's ``.config`` from a recipe: the base (``make tinyconfig`` or
``defconfig``, or a config file), the fragments merged as merge_config.sh does, ``make
olddefconfig``, then the check that every option asked for survived."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kbench.contract.kernel_config import config_digest
from kbench.kernels.check import lost_options
from kbench.kernels.errors import KernelConfigError
from kbench.kernels.kconfig import Fragment, Redefinition, merge_fragments, parse_config
from kbench.kernels.kconfig_deps import read_kconfig
from kbench.kernels.make import BuildProgress, make
from kbench.kernels.recipe import DEBIAN_FIXES, DEBIAN_PREFIX, DEFCONFIG, MINIMAL, ConfigRecipe

KVM_GUEST_FRAGMENT = Path("kernel/configs/kvm_guest.config")


@dataclass(frozen=True)
class Configured:
    text: str
    digest: str
    redefinitions: tuple[Redefinition, ...]
    """Options the user's fragments set otherwise than the base or kbench's fragment did."""


def base_config(source: Path, build_dir: Path, recipe: ConfigRecipe, log: Path, make_args: tuple[str, ...],
                progress: BuildProgress | None) -> tuple[str, list[Fragment]]:
    """The base ``.config`` text and the fragments of the base itself (not checked)."""
    if recipe.base in (MINIMAL, DEFCONFIG):
        target = "tinyconfig" if recipe.base == MINIMAL else "defconfig"
        make(source, build_dir, [target], log, extra=make_args, progress=progress, what=f"make {target}")
        text = (build_dir / ".config").read_text(errors="replace")
        guest = source / KVM_GUEST_FRAGMENT
        if recipe.base == MINIMAL and guest.is_file():
            return text, [Fragment(str(KVM_GUEST_FRAGMENT), guest.read_text())]
        return text, []
    assert recipe.base_text is not None
    return recipe.base_text, [DEBIAN_FIXES] if recipe.base.startswith(DEBIAN_PREFIX) else []


def configure(source: Path, build_dir: Path, recipe: ConfigRecipe, log: Path, make_args: tuple[str, ...] = (),
              progress: BuildProgress | None = None) -> Configured:
    """Write ``build_dir/.config`` for ``recipe``; KernelConfigError listing every option asked for
    that ``olddefconfig`` did not keep."""
    build_dir.mkdir(parents=True, exist_ok=True)
    base, base_fragments = base_config(source, build_dir, recipe, log, make_args, progress)
    merged = merge_fragments(base, [*base_fragments, *recipe.asked])
    (build_dir / ".config").write_text(merged.text)
    make(source, build_dir, ["olddefconfig"], log, extra=make_args, progress=progress, what="make olddefconfig")
    text = (build_dir / ".config").read_text(errors="replace")
    lost = lost_options(recipe.asked, parse_config(text), lambda: read_kconfig(source))
    if lost:
        listed = "; ".join(str(item) for item in lost)
        raise KernelConfigError(f"{len(lost)} config option{'s' if len(lost) != 1 else ''} asked for "
                                f"did not survive make olddefconfig: {listed}")
    users = {f.name for f in recipe.fragments}
    shown = tuple(r for r in merged.redefinitions if r.fragment in users)
    return Configured(text, config_digest(text), shown)
