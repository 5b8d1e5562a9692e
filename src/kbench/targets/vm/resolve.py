"""Resolve a kernel spec (``deb:<release>``, ``tree:PATH[@REV]``, a bzImage, a build tree) to a ``KernelImage``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from .bundle import is_bundle, read_bundle
from .debian import resolve_debian
from .errors import KernelResolveError
from .kernel import KernelImage, resolve_path


def resolve_kernel(
    spec: str,
    cache_dir: Path,
    *,
    kernel_build: Path | None = None,
    modules_dir: Path | None = None,
    features: Iterable[str] | None = None,
) -> KernelImage:
    """Resolve a kernel spec.

    - ``deb:<release>`` (e.g. ``deb:6.1.0-56-amd64``): the Debian image, headers and
      kbuild packages are downloaded with ``apt-get download`` and extracted under
      ``cache_dir/kernels/<release>`` (once; later calls are instant).
    - a path to a bzImage file; ``kernel_build`` optionally names its build tree and
      ``modules_dir`` its ``lib/modules/<release>`` tree.
    - a path to a kernel build tree (``arch/x86/boot/bzImage`` inside it); modules are
      taken from ``modules_dir`` if given (``make modules_install INSTALL_MOD_PATH=X``
      then ``X/lib/modules/<release>``).
    - a path to a kernel bundle (a directory holding ``kernel.json``: the image, its config,
      modules and kbuild kit; bundle.py), which is how a fleet job's kernel reaches a worker.
    - ``tree:PATH[@REV]``: a kernel source tree (a revision of a git repository, or the
      directory as it stands; ``tree:URL@REV``: a revision of a remote repository, cloned
      first) that kbench builds first with the minimal config for ``features``
      (``kbench.kernels.requirements``; default: a probe's or kbench.ko's runs), cached
      by tree id and config (targets/vm/tree.py).
    """
    if spec.startswith("tree:"):
        if kernel_build is not None or modules_dir is not None:
            raise KernelResolveError("--kernel-build/modules_dir apply to path specs, not to tree: kernels")
        from .tree import resolve_tree

        return resolve_tree(spec, Path(cache_dir), features=features)
    if spec.startswith("deb:"):
        if kernel_build is not None or modules_dir is not None:
            raise KernelResolveError("--kernel-build/modules_dir apply to path specs, not to deb: kernels")
        return resolve_debian(spec[4:], Path(cache_dir), spec=spec)
    if ":" in spec.split("/")[0] and not Path(spec).exists():
        raise KernelResolveError(
            f"unknown kernel spec {spec!r}: use deb:<release> (e.g. deb:6.1.0-56-amd64), "
            "tree:PATH[@REV] (a kernel source tree kbench builds), a bzImage file or a kernel build directory"
        )
    path = Path(spec)
    if is_bundle(path) and kernel_build is None and modules_dir is None:
        return read_bundle(path, spec)  # what a fleet job's kernel travels as (bundle.py)
    return resolve_path(path, spec=spec, kernel_build=kernel_build, modules_dir=modules_dir)
