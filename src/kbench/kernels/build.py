"""Build a kernel from source, or find it built: ``build_kernel(tree, rev, recipe)``.

The cache of built kernels (``CACHE_DIR/built-kernels/KEY``) is keyed by the source's
tree id, the config recipe's digest and the compiler's identity: the same revision and
config again is found without checking anything out. A build happens in a *workspace*
(``CACHE_DIR/kernel-workspaces/NAME-KEY``, one per tree and recipe, locked while used): a
checkout of kbench's own (``src``, for a revision) and the build directory (``build``),
both kept, so that the next revision builds incrementally. The entry gets the bzImage,
the ``.config``, the modules (``modules_install``), the kit out-of-tree modules build
against and the build's log.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import time
from datetime import UTC, datetime
from pathlib import Path

from kbench.cachefiles import default_cache_dir, locked
from kbench.kernels.build_id import gnu_build_id
from kbench.kernels.built import BuiltKernel, read_marker, write_marker
from kbench.kernels.configure import configure
from kbench.kernels.errors import KernelBuildError
from kbench.kernels.kconfig import parse_config
from kbench.kernels.kit import make_kit
from kbench.kernels.make import BuildProgress, make
from kbench.kernels.recipe import ConfigRecipe
from kbench.kernels.source import SourceTree, check_out, identify
from kbench.kernels.toolchain import toolchain

ENTRIES = "built-kernels"
WORKSPACES = "kernel-workspaces"
TREE_DIGESTS = "kernel-tree-digests"
STEPS_FILE = "full-build-steps.json"
"""Per recipe digest, how many objects a build from nothing compiled (progress's total)."""


def entry_key(tree_id: str, recipe_digest: str, compiler: str) -> str:
    """The built-kernel cache's key: (source tree id, config recipe digest, compiler identity)."""
    return hashlib.sha256(f"{tree_id}\0{recipe_digest}\0{compiler}".encode()).hexdigest()[:24]


def workspace_for(cache_dir: Path, source: SourceTree, recipe: ConfigRecipe) -> Path:
    """The default workspace of ``source``'s tree (its path, whatever the revision) and ``recipe``."""
    key = hashlib.sha256(f"{source.path}\0{recipe.digest()}".encode()).hexdigest()[:16]
    return cache_dir / WORKSPACES / f"{source.path.name or 'tree'}-{key}"


def find_built(
    tree: Path, rev: str | None, recipe: ConfigRecipe, *, cache_dir: Path | None = None
) -> BuiltKernel | None:
    """The cached kernel for ``tree`` at ``rev`` with ``recipe``, or None (nothing is built)."""
    started = time.monotonic()
    cache_dir = cache_dir or default_cache_dir()
    source = identify(tree, rev, cache_dir / TREE_DIGESTS)
    found = read_marker(cache_dir / ENTRIES / entry_key(source.tree_id, recipe.digest(), toolchain().identity))
    return found.for_source(source, recipe.describe(), time.monotonic() - started) if found else None


def build_kernel(
    tree: Path,
    rev: str | None,
    recipe: ConfigRecipe,
    *,
    cache_dir: Path | None = None,
    workspace: Path | None = None,
    progress: BuildProgress | None = None,
) -> BuiltKernel:
    """The kernel of ``tree`` at ``rev`` (None: the directory as it stands) with ``recipe``:
    from the cache, else built in ``workspace`` (default: ``workspace_for``; bisect and watch
    pass their own) and cached. KernelSourceError, KernelConfigError or KernelBuildError."""
    started = time.monotonic()
    cache_dir = cache_dir or default_cache_dir()
    source = identify(tree, rev, cache_dir / TREE_DIGESTS)
    tools = toolchain()
    entry = cache_dir / ENTRIES / entry_key(source.tree_id, recipe.digest(), tools.identity)
    found = read_marker(entry)
    if found is not None:
        return found.for_source(source, recipe.describe(), time.monotonic() - started)
    workspace = workspace or workspace_for(cache_dir, source, recipe)
    with locked(workspace.with_name(workspace.name + ".lock")):
        found = read_marker(entry)  # built by another kbench while this one waited
        if found is not None:
            return found.for_source(source, recipe.describe(), time.monotonic() - started)
        return _build(source, recipe, entry, workspace, cache_dir, progress, started)


def _build(source: SourceTree, recipe: ConfigRecipe, entry: Path, workspace: Path, cache_dir: Path,
           progress: BuildProgress | None, started: float) -> BuiltKernel:
    tools = toolchain()
    durations: dict[str, float] = {}
    clock = time.monotonic()
    checkout = check_out(source, workspace / "src")
    durations["checkout"] = time.monotonic() - clock
    build_dir = workspace / "build"
    from_nothing = not (build_dir / "vmlinux").is_file()
    stamp = datetime.now(UTC)
    log = workspace / "logs" / f"{stamp:%Y%m%dT%H%M%S}-{(source.commit or source.tree_id)[:12]}.log"
    clock = time.monotonic()
    configured = configure(checkout, build_dir, recipe, log, tools.make_args, progress)
    durations["configure"] = time.monotonic() - clock
    clock = time.monotonic()
    steps = _known_steps(cache_dir, recipe) if from_nothing else None
    done = make(checkout, build_dir, [], log, extra=tools.make_args, progress=progress,
                what=f"building {source.path.name}{'@' + source.rev if source.rev else ''}", expected=steps)
    durations["build"] = time.monotonic() - clock
    if from_nothing:
        _remember_steps(cache_dir, recipe, done.steps)
    clock = time.monotonic()
    release = (build_dir / "include" / "config" / "kernel.release").read_text().strip()
    partial = entry.with_name(f"{entry.name}.tmp{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        image = build_dir / "arch" / "x86" / "boot" / "bzImage"
        if not image.is_file():
            raise KernelBuildError(f"make succeeded but left no {image} (log: {log})", log=log)
        shutil.copy2(image, partial / "bzImage")
        (partial / "config").write_text(configured.text)
        modules_dir = None
        if parse_config(configured.text).get("CONFIG_MODULES") == "y":
            make(checkout, build_dir, ["modules_install"], log, progress=progress, what="make modules_install",
                 extra=(*tools.make_args, f"INSTALL_MOD_PATH={partial / 'modules'}", "INSTALL_MOD_STRIP=1"))
            modules_dir = partial / "modules" / "lib" / "modules" / release
            for link in ("build", "source"):  # into the workspace, which moves on: the kit stands for them
                with contextlib.suppress(FileNotFoundError):
                    (modules_dir / link).unlink()
        make_kit(checkout, build_dir, partial / "kbuild")
        durations["install"] = time.monotonic() - clock
        durations["total"] = time.monotonic() - started
        shutil.copy2(log, partial / "build.log")
        kernel = BuiltKernel(
            key=entry.name, release=release, image=entry / "bzImage", config=entry / "config",
            config_digest=configured.digest, kbuild_dir=entry / "kbuild",
            modules_dir=entry / "modules" / "lib" / "modules" / release if modules_dir else None,
            build_dir=build_dir, log=entry / "build.log", tree=source.path, rev=source.rev, commit=source.commit,
            tree_id=source.tree_id, recipe=recipe.describe(), recipe_digest=recipe.digest(),
            compiler=tools.identity, build_id=gnu_build_id(build_dir / "vmlinux"),
            built_at=stamp.isoformat().replace("+00:00", "Z"),
            durations={name: round(value, 3) for name, value in durations.items()},
            warnings=tuple(str(redefinition) for redefinition in configured.redefinitions),
        )
        write_marker(partial, _at(kernel, partial))
        if read_marker(entry) is not None:  # the same tree built meanwhile from another workspace
            shutil.rmtree(partial, ignore_errors=True)
            return kernel
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(entry)  # a damaged entry (no marker) of a killed kbench
        partial.rename(entry)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return kernel


def _at(kernel: BuiltKernel, directory: Path) -> BuiltKernel:
    """``kernel`` with its entry's files named under ``directory`` (the entry before its rename)."""
    from dataclasses import replace

    entry = kernel.image.parent
    moved = {name: directory / getattr(kernel, name).relative_to(entry)
             for name in ("image", "config", "kbuild_dir", "log")}
    modules = directory / kernel.modules_dir.relative_to(entry) if kernel.modules_dir else None
    return replace(kernel, modules_dir=modules, **moved)


def _known_steps(cache_dir: Path, recipe: ConfigRecipe) -> int | None:
    try:
        value = json.loads((cache_dir / WORKSPACES / STEPS_FILE).read_text()).get(recipe.digest())
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, int) and value > 0 else None


def _remember_steps(cache_dir: Path, recipe: ConfigRecipe, steps: int) -> None:
    path = cache_dir / WORKSPACES / STEPS_FILE
    with contextlib.suppress(OSError, ValueError), locked(path.with_name(path.name + ".lock")):
        try:
            known = json.loads(path.read_text())
        except FileNotFoundError:
            known = {}
        known[recipe.digest()] = steps
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(known))
