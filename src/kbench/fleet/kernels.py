"""Kernels a fleet job carries to workers that share nothing with its submitter.

A fleet instance's ``target`` is ``local``, ``deb:RELEASE`` (each worker fetches Debian's
package), ``tree:URL@REV`` (each worker clones the repository into its cache and builds the
revision with kbench's own kernel build, ``kbench.kernels``) or a kernel on the submitting
machine, which travels:

- a bzImage file: the image alone (it boots if the guest's drivers are built in);
- a kernel bundle, a directory holding ``kernel.json`` (``kbench.targets.vm.bundle``): its
  image, ``config`` and ``modules_dir`` when it names them;
- a kernel build directory (``arch/x86/boot/bzImage`` inside it): its image and ``.config``.

Each part is an input like a job's files (``kbench.fleet.inputs``): hashed, stored once per
digest in the fleet's store, fetched once per worker into its cache by digest, checked, and
refused on a mismatch. A modules directory travels as one tar archive (sorted, no owners or
times: the same modules make the same digest). On the worker the parts become a kernel bundle
under ``$XDG_CACHE_HOME/kbench/fleet/kernels/KEY`` (KEY: the parts' digests), made once and
booted as the instance's target.

``tree:PATH`` (a tree on the submitting machine) is refused: a kernel tree with its history
is gigabytes, beyond what a job carries, and the workers need its commits to name what they
built; push it to a repository the workers reach and give ``tree:URL@REV``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from kbench.fleet.inputs import MAX_FILE_BYTES, InputRefused, JobInput, cached, sha256_file
from kbench.fleet.plan import PlanError
from kbench.jobs import JobInstance

log = logging.getLogger("kbench.fleet")

PARTS = ("image", "config", "modules")


@dataclass(frozen=True)
class CarriedKernel:
    """A kernel on the submitting machine as it travels: its parts, each an input (``path``: its
    name in the bundle), and where they are on this machine (to store them)."""

    spec: str  # as the job names it
    release: str
    parts: dict[str, JobInput]
    sources: dict[str, Path]

    def to_dict(self) -> dict[str, Any]:
        return {"release": self.release, **{name: item.to_dict() for name, item in self.parts.items()}}


def is_carried(spec: str) -> bool:
    """Whether a target names a kernel on the submitting machine (a path: it travels)."""
    return spec != "local" and not spec.startswith(("deb:", "tree:"))


def check_tree(instance: JobInstance) -> None:
    """``tree:URL@REV`` goes to the workers as written; ``tree:PATH`` and a URL with a credential are refused."""
    from kbench.git import without_credential
    from kbench.kernels.errors import KernelSourceError
    from kbench.kernels.spec import parse_tree_spec

    try:
        tree = parse_tree_spec(instance.target)
    except KernelSourceError as exc:
        raise PlanError(f"instance {instance.id}: {exc}") from None
    if tree.url is None:
        raise PlanError(
            f"instance {instance.id}: target {instance.target!r} is a kernel tree on this machine, which fleet "
            "workers do not have (and a tree with its history is more than a job carries): push it to a repository "
            "the workers reach and give tree:URL@REV (https://, ssh://, git://, or file:// of a path they all see)")
    clean = without_credential(tree.url)
    if clean is not None:
        raise PlanError(f"instance {instance.id}: the URL of {instance.target!r} carries a credential, which would "
                        f"be stored in clear in the fleet's database: give tree:{clean}@{tree.rev} and let each worker "
                        "authenticate (a git credential helper, ~/.netrc or an SSH key)")


def gather_kernels(job_path: Path, instances: Sequence[JobInstance], workdir: Path) -> list[CarriedKernel]:
    """The kernels the job's instances name on this machine, each part hashed (a modules
    directory packed into ``workdir``); PlanError for a path that does not exist, is not a
    kernel, or passes the size limit, and for a ``tree:`` the workers cannot reach."""
    found: dict[str, CarriedKernel] = {}
    for instance in instances:
        spec = instance.target
        if spec.startswith("tree:"):
            check_tree(instance)
        if not is_carried(spec) or spec in found:
            continue
        path = Path(spec).expanduser()
        if not path.is_absolute():
            path = job_path.parent / path
        found[spec] = _carried(instance, spec, path, workdir)
    return list(found.values())


def _carried(instance: JobInstance, spec: str, path: Path, workdir: Path) -> CarriedKernel:
    from kbench.targets.vm.bundle import MANIFEST, is_bundle, read_bundle
    from kbench.targets.vm.errors import KernelResolveError
    from kbench.targets.vm.kernel import bzimage_release

    where = f"instance {instance.id}: target {spec!r}"
    if not path.exists():
        raise PlanError(f"{where}: no such file {path}: a job names only kernels that exist where it is submitted")
    sources: dict[str, Path] = {}
    try:
        if is_bundle(path):
            kernel = read_bundle(path, spec)
            sources["image"] = kernel.vmlinuz
            if kernel.config is not None:
                sources["config"] = kernel.config
            if kernel.modules_dir is not None:
                sources["modules"] = _packed(kernel.modules_dir, workdir)
            release = kernel.release
        elif path.is_dir():
            image = path / "arch" / "x86" / "boot" / "bzImage"
            if not image.is_file():
                raise PlanError(f"{where}: {path} is a directory that is neither a kernel bundle ({MANIFEST}) nor a "
                                "kernel build tree (arch/x86/boot/bzImage)")
            sources["image"] = image
            if (path / ".config").is_file():
                sources["config"] = path / ".config"
            release = bzimage_release(image)
        else:
            sources["image"] = path
            release = bzimage_release(path)
    except KernelResolveError as exc:
        raise PlanError(f"{where}: {exc}") from None
    parts: dict[str, JobInput] = {}
    for name, source in sources.items():
        size = source.stat().st_size
        if size > MAX_FILE_BYTES:
            raise PlanError(f"{where}: its {name} ({source}) has {size} bytes, more than a job carries in one file "
                            f"({MAX_FILE_BYTES >> 20} MiB)")
        parts[name] = JobInput(name, sha256_file(source), size, 0o644)
    return CarriedKernel(spec, release, parts, sources)


def _packed(modules_dir: Path, workdir: Path) -> Path:
    """``modules_dir`` as a tar archive whose bytes depend on its files only (sorted; no owner,
    no time); symbolic links (``build``, ``source``) are left out."""
    archive = workdir / f"modules-{hashlib.sha256(str(modules_dir).encode()).hexdigest()[:16]}.tar"

    def clean(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if info.issym() or info.islnk():
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.mtime = 0
        info.mode = 0o755 if info.isdir() else 0o644
        return info

    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(modules_dir.rglob("*")):
            if path.is_symlink():
                continue
            tar.add(path, arcname=str(path.relative_to(modules_dir)), recursive=False, filter=clean)
    return archive


@contextmanager
def packing() -> Iterator[Path]:
    """A temporary directory for the archives of modules directories, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="kbench-kernels-") as folder:
        yield Path(folder)


def store_kernels(engine: Engine, kernels: Sequence[CarriedKernel]) -> dict[str, Any]:
    """Each part not stored yet stored; the manifest's ``kernels`` (spec -> release and parts)."""
    from kbench.store.inputs import InputCorrupt, InputStore

    store = InputStore(engine)
    for kernel in kernels:
        for name, item in kernel.parts.items():
            try:
                store.put_file(item.digest, kernel.sources[name])
            except InputCorrupt as exc:
                raise PlanError(f"kernel {kernel.spec}: {name}: {exc}") from None
    return {kernel.spec: kernel.to_dict() for kernel in kernels}


def carried_specs(manifest: dict[str, Any] | None) -> set[str]:
    return set((manifest or {}).get("kernels") or {})


def with_kernels(engine: Engine, manifest: dict[str, Any] | None, instances: list[JobInstance],
                 cache: Path) -> list[JobInstance]:
    """``instances`` with each carried kernel's target replaced by its bundle in this machine's
    cache (made from the store's parts as needed, each digest checked)."""
    kernels = (manifest or {}).get("kernels") or {}
    bundles = {spec: bundle(engine, spec, dict(kernels[spec]), cache)
               for spec in dict.fromkeys(i.target for i in instances) if spec in kernels}
    return [replace(i, target=str(bundles[i.target])) if i.target in bundles else i for i in instances]


def bundle(engine: Engine, spec: str, kernel: dict[str, Any], cache: Path) -> Path:
    """The bundle of a carried kernel on this machine: its parts from the input cache (fetched
    once, checked by digest on every use), the bundle made once per set of digests."""
    from kbench.targets.vm.bundle import MANIFEST, manifest

    parts = {name: JobInput(str(kernel[name]["path"]), str(kernel[name]["digest"]), int(kernel[name]["size"]),
                            int(kernel[name]["mode"]))
             for name in PARTS if kernel.get(name)}
    try:
        files = {name: cached(engine, item, cache / "inputs") for name, item in parts.items()}
    except InputRefused as exc:
        raise InputRefused(f"kernel {spec}: {exc}") from None
    key = hashlib.sha256(" ".join(f"{n}={parts[n].digest}" for n in sorted(parts)).encode()).hexdigest()[:24]
    top = cache / "kernels" / key
    if (top / MANIFEST).is_file() and os.path.samefile(top / "image", files["image"]):
        log.info("kernel %s: bundle %s in this machine's cache", spec, key)
        return top
    top.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f"{key}.part", dir=top.parent))
    try:
        os.link(files["image"], partial / "image")  # the cached input itself: hashed again before each use
        if "config" in files:
            shutil.copyfile(files["config"], partial / "config")
        if "modules" in files:
            with tarfile.open(files["modules"]) as tar:
                tar.extractall(partial / "modules", filter="data")
        (partial / MANIFEST).write_text(json.dumps(manifest(
            release=str(kernel["release"]), image="image", config="config" if "config" in files else None,
            modules_dir="modules" if "modules" in files else None, kbuild_dir=None, build_id=None, source="bzimage",
            built_from={"submitted_as": spec, "image_digest": parts["image"].digest}), indent=1))
        shutil.rmtree(top, ignore_errors=True)
        try:
            partial.rename(top)
        except OSError:  # another worker of this host made it first
            if not (top / MANIFEST).is_file():
                raise
            shutil.rmtree(partial, ignore_errors=True)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    log.info("kernel %s: bundle %s made (%s)", spec, key, ", ".join(sorted(parts)))
    return top
