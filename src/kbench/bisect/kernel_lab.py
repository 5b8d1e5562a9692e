"""Real measurements for a bisection of the kernel itself: build a kernel per commit, boot it in qemu.

The commits are those of a kernel tree (or of anything whose build produces a kernel).
Building a commit: a worktree of it, the user's ``build`` command there (a non-zero exit
skips the commit with a one-line reason), then its ``image``: a bzImage file inside the
worktree, or a directory (``"."``: the worktree itself) taken as a kernel build tree
(``arch/x86/boot/bzImage``; ``kfunc.*`` benchmarks get kbench.ko built against it). Then a
*boot check*: the kernel is booted once (with kbench.ko when the benchmark is a
``kfunc.*`` one) and runs a command. A kernel that panics, hangs past ``boot_timeout`` or
that qemu refuses skips the commit: ``"boot failed: <why>"``, then the last lines of the
guest console, which the driver keeps as the step's ``console_tail``.

What the trials need is kept: a bzImage is copied to ``<worktrees root>/kernels/<sha12>/``
with the few modules the guest boots with, and the worktree goes (a marker written after
the boot check lets a resumed bisection reuse the copy without rebuilding); a build tree
stays in its worktree until ``close()``.

The guest needs virtio_pci and virtio_console. A kernel that builds them as modules
(Debian's configuration does) needs its modules: ``modules`` names them inside the
worktree (``make modules_install INSTALL_MOD_PATH=<it>`` output or its
``lib/modules/<release>``, or a build tree); a build tree whose ``modules.order`` lists
modules is its own modules directory by default.

A trial of commit X: boot X's kernel fresh, one stored run (``execute_run``, tags
``bisect:<id>`` and ``commit:<sha12>``) of the benchmark, power off. Every trial boots,
because boot-to-boot variation (memory layout, cache colouring, timer calibration) is
part of a kernel's performance, and so trials of X, G and B can interleave. Its
statistic is ``trial_statistic`` (the median of the steady-state part) of the primary
series. All trials share one batch (operations per sample): ``batch``, or the one
calibrated by the first trial measured, so a slower commit is not timed differently.
``round`` interleaves like ``CommandLab.round``: one trial of each commit asked for per
round, in a random order. A kernel that passed its boot check but does not boot for a
trial stops the bisection (``BisectError`` with the console tail): a flaky boot is not a
performance verdict. ``problems`` collects BUG/WARNING/Oops lines of every boot's console.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from kbench.bisect.driver import BisectError, ProgramFailed
from kbench.bisect.git import Worktrees
from kbench.bisect.labkit import (
    DEFAULT_BUILD_TIMEOUT_S,
    REASON_CHARS,
    LabBase,
    build_failure_reason,
    primary_statistic,
    run_build_command,
)
from kbench.catalog.benchmarks import lookup
from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.engine.runner import RunResult, execute_run
from kbench.kinds.instructions.benchmark import METRIC as INSTRUCTIONS
from kbench.kinds.instructions.benchmark import counted
from kbench.kinds.instructions.run import counted_request
from kbench.kinds.registry import kind_of
from kbench.store.db import Store
from kbench.targets.base import ExecutionFailed, TargetError
from kbench.targets.vm import KernelResolveError, VmTargetError, default_cache_dir
from kbench.targets.vm.bootimage import boot_image_cache
from kbench.targets.vm.errors import VmError
from kbench.targets.vm.initramfs import BOOT_MODULES
from kbench.targets.vm.kernel import bzimage_release, resolve_path
from kbench.targets.vm.kmods import ModuleTree
from kbench.targets.vm_target import VmTarget

IMAGE_IN_TREE = Path("arch/x86/boot/bzImage")

CHECKED = "boot-checked.json"  # written next to a bzImage copy once its boot check passed
TAIL_MARK = "--- last guest console lines ---"


@dataclass(frozen=True)
class _Kernel:
    spec: Path  # a bzImage (the copy) or a build tree (in the kept worktree)
    modules_dir: Path | None
    kept_worktree: bool
    tree_spec: str | None = None  # ``tree:REPO@SHA``: a kernel kbench built (``spec`` its cached bzImage)


def _inside(name: str, what: str) -> str:
    if Path(name).is_absolute() or ".." in Path(name).parts:
        raise ValueError(f"{what} must be a path inside the repository, got {name!r}")
    return name


def boot_failure(exc: BaseException) -> tuple[str, str]:
    """One line saying why a guest did not boot (or died), and the last lines of its console."""
    for error in (exc, exc.__cause__):
        if isinstance(error, VmError):
            return (error.reason.strip().splitlines() or ["the VM failed"])[0], error.console_tail
    head, _, tail = str(exc).partition(f"\n{TAIL_MARK}\n")
    return (head.strip().splitlines() or [type(exc).__name__])[0], tail


def _copy_boot_modules(image: Path, modules: Path, out: Path) -> None:
    """Copy the modules a guest boots with (virtio transport, dependencies) out of ``modules``
    (a ``modules_install`` root or a ``lib/modules/<release>`` tree) into ``out``."""
    found = resolve_path(image, modules_dir=modules).modules_dir
    assert found is not None
    tree = ModuleTree(found)
    out.mkdir(parents=True, exist_ok=True)
    paths = [mod.path for mod in tree.closure([name for name in BOOT_MODULES if not tree.is_builtin(name)])]
    paths += [found / name for name in ("modules.builtin", "modules.order") if (found / name).is_file()]
    for path in paths:
        copy = out / path.relative_to(found)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)


class KernelLab(LabBase["_Kernel"]):
    def __init__(
        self, store: Store, *, tag: str, repo: Path, worktrees: Worktrees, build: str, image: str, benchmark: str,
        params: dict[str, str], samples: int, seed: int, cache_dir: Path | None = None, boot_timeout: float = 120.0,
        modules: str | None = None, batch: int | None = None,
        extra_tags: tuple[str, ...] = (), build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S, metric: str = "time",
    ):
        if samples < 1:
            raise ValueError(f"need samples >= 1, got {samples}")
        if not boot_timeout > 0:
            raise ValueError(f"need a positive boot timeout, got {boot_timeout}")
        self.bench: Benchmark = lookup(benchmark)
        self.kind = kind_of(self.bench)
        if self.kind.sample_unit is None:  # a count of samples per boot is what is measured
            raise ValueError(f"{self.bench.name} cannot be a kernel bisection's benchmark: it measures a "
                             f"probe (syscall.*, ...) or kfunc.* benchmark, a count of samples per boot")
        self.bench.validate_params(params)
        self.counting = metric == INSTRUCTIONS  # counted by kbench's TCG plugin in each kernel, not timed
        if self.counting:
            self.bench = counted(self.bench)
        self.store = store
        self.tag = tag
        self.extra_tags = extra_tags
        super().__init__(repo, seed, build_timeout_s)
        self.worktrees = worktrees
        self.build_cmd = build
        self.image = _inside(image, "image")
        self.modules = _inside(modules, "modules") if modules is not None else None
        self.params = dict(params)
        self.samples = samples
        self.batch = batch
        self.cache_dir = cache_dir or default_cache_dir()
        self.boot_timeout = boot_timeout
        self.kernels_dir = worktrees.root / "kernels"
        self.boots = 0  # guests started, boot checks included
        self._kernels: dict[str, _Kernel] = {}
        self._cached_here: set[Path] = set()  # boot images this lab decompressed into the cache
        self.kernel_features: tuple[str, ...] = ()  # more than the guest's own needs a tree: kernel is built with

    # -- life cycle -------------------------------------------------------------------

    def close(self) -> None:
        """Drop the boot images this lab decompressed into the cache (tens of MB per commit) and the
        worktrees kept for their build trees (bzImage copies stay, for a resumed bisection)."""
        for path in self._cached_here:
            path.unlink(missing_ok=True)
        self._cached_here.clear()
        for commit, kernel in list(self._kernels.items()):
            if kernel.kept_worktree:
                self.worktrees.remove(commit)
                del self._kernels[commit]

    # -- building ---------------------------------------------------------------------

    def build(self, commit: str) -> str | None:
        self._forget(commit)
        path = self.worktrees.add(commit)
        kernel: _Kernel | None = None
        try:
            error = run_build_command(self.build_cmd, path, timeout_s=self.build_timeout_s)
            if error is not None:
                return error
            found, missing = self._kernel(commit, path)
            if found is None:
                return missing
            failed = self._boot_check(commit, found)
            if failed is not None:
                return failed
            kernel = found
        finally:
            if kernel is None:  # a commit that failed keeps nothing
                shutil.rmtree(self.kernels_dir / commit[:12], ignore_errors=True)
            if kernel is None or not kernel.kept_worktree:
                self.worktrees.remove(commit)  # a bzImage was copied out
        if not kernel.kept_worktree:
            (kernel.spec.parent / CHECKED).write_text(json.dumps(self._recipe()) + "\n")
        self._kernels[commit] = kernel
        return None

    def _recipe(self) -> dict[str, str | None]:
        """What made a kept bzImage: a resumed bisection reuses it only if this is unchanged."""
        return {"build": self.build_cmd, "image": self.image, "modules": self.modules}

    def _forget(self, commit: str) -> None:
        kernel = self._kernels.pop(commit, None)
        if kernel is not None and kernel.kept_worktree:
            self.worktrees.remove(commit)
        shutil.rmtree(self.kernels_dir / commit[:12], ignore_errors=True)

    def _kernel(self, commit: str, worktree: Path) -> tuple[_Kernel | None, str]:
        """What the build produced, kept where trials find it; or None and why not."""
        built = worktree / self.image
        if not built.exists():
            return None, f"{self.image}: not found after the build command"
        modules: Path | None = None
        if self.modules is not None:
            modules = worktree / self.modules
            if not modules.is_dir():
                return None, f"{self.modules}: no such directory after the build command"
        if built.is_dir():
            order = built / "modules.order"
            if modules is None and order.is_file() and order.read_text().strip():
                modules = built  # a modular build tree holds its own modules
            return _Kernel(spec=built, modules_dir=modules, kept_worktree=True), ""
        kept = self.kernels_dir / commit[:12]
        kept.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, kept / "bzImage")
        try:
            bzimage_release(kept / "bzImage")
        except KernelResolveError as exc:  # qemu would refuse it
            return None, f"boot failed: {str(exc).replace(str(kept / 'bzImage'), self.image)[:REASON_CHARS]}"
        if modules is not None:
            try:
                _copy_boot_modules(kept / "bzImage", modules, kept / "modules")
            except VmTargetError as exc:
                return None, f"{self.modules}: {str(exc).splitlines()[0][:REASON_CHARS]}"
        return self._kept(commit), ""

    def _kept(self, commit: str) -> _Kernel:
        kept = self.kernels_dir / commit[:12]
        modules = kept / "modules"
        return _Kernel(spec=kept / "bzImage", modules_dir=modules if modules.is_dir() else None, kept_worktree=False)

    def _reusable(self, commit: str) -> _Kernel | None:
        """A bzImage this bisection built and boot-checked before (an earlier process), if any."""
        kernel = self._kept(commit)
        try:
            recipe = json.loads((kernel.spec.parent / CHECKED).read_text())
        except (OSError, ValueError):
            return None
        return kernel if recipe == self._recipe() and kernel.spec.is_file() else None

    def prepare(self, commit: str) -> _Kernel:
        if commit not in self._kernels:
            reused = self._reusable(commit)
            if reused is not None:
                self._kernels[commit] = reused
            else:
                error = self.build(commit)
                if error is not None:
                    raise BisectError(f"commit {commit[:12]} no longer builds: {error.splitlines()[0]}")
        return self._kernels[commit]

    # -- booting ----------------------------------------------------------------------

    def _target(self, kernel: _Kernel) -> VmTarget:
        self.boots += 1
        return VmTarget(kernel.tree_spec or str(kernel.spec), cache_dir=self.cache_dir,
                        with_module=self.kind.in_kernel, boot_timeout=self.boot_timeout,
                        modules_dir=None if kernel.tree_spec else kernel.modules_dir,
                        count_instructions=self.counting, kernel_features=self.kernel_features)

    @staticmethod
    def _image_of(kernel: _Kernel) -> Path:
        return kernel.spec / IMAGE_IN_TREE if kernel.spec.is_dir() else kernel.spec

    def _boot_check(self, commit: str, kernel: _Kernel) -> str | None:
        """Boot the kernel once and run a command in it; None when that worked, else the skip reason."""
        cached = boot_image_cache(self._image_of(kernel), self.cache_dir)
        if not any(path.exists() for path in cached):
            self._cached_here.update(cached)  # dropped at close(); a kernel cached before is left alone
        target = self._target(kernel)
        try:
            try:
                session = target.start()
                said = session.exec(["uname", "-r"], timeout=60)
            except (TargetError, VmTargetError) as exc:
                line, tail = boot_failure(exc)
                return f"boot failed: {line[:REASON_CHARS]}" + (f"\n{tail}" if tail.strip() else "")
            if not said.ok or not said.text.strip():
                error = said.stderr.decode(errors="replace").strip() or f"exit {said.rc}"
                return f"boot failed: the guest cannot run a command (uname -r: {error[:REASON_CHARS]})"
            if self.kind.in_kernel and target.module is None:
                return f"kbench.ko: {build_failure_reason(target.module_error or 'not loaded')}"
            self._note_problems(commit, target)
        finally:
            target.close()
        return None

    def _note_problems(self, commit: str, target: VmTarget) -> None:
        if target.session is None:
            return
        for line in target.session.console_problems():
            noted = f"{commit[:12]}: {line}"
            if noted not in self.problems:
                self.problems.append(noted)

    # -- measuring --------------------------------------------------------------------

    def measure(self, commit: str, *, label: str | None = None) -> RunResult:
        """One trial of ``commit`` whose run is stored with the commit it measured (and ``label``),
        as a history point (``kbench watch``); BisectError when the kernel no longer builds or boots."""
        return self._trial(commit, self.prepare(commit), version=(commit, label))

    def _trial(self, commit: str, kernel: _Kernel, version: tuple[str, str | None] | None = None) -> RunResult:
        target = self._target(kernel)
        try:
            try:
                target.start()
            except TargetError as exc:
                line, tail = boot_failure(exc)
                raise BisectError(f"commit {commit[:12]}: its kernel passed its boot check but did not boot for "
                                  f"a trial: {line}" + (f"\n{TAIL_MARK}\n{tail}" if tail.strip() else "")) from exc
            if self.kind.in_kernel and target.module is None:
                raise BisectError(f"commit {commit[:12]}: kbench.ko is not loaded: {target.module_error}")
            request = RunRequest(benchmark=self.bench.name, params=self.params, samples=self.samples,
                                 batch=self.batch, tags=(self.tag, *self.extra_tags, f"commit:{commit[:12]}"),
                                 commit=version[0] if version else None, label=version[1] if version else None)
            if self.counting:
                request = counted_request(self.bench, request)
            try:
                result = execute_run(self.store, self.bench, request, target)
            except ExecutionFailed as exc:
                raise ProgramFailed(commit, str(exc)) from exc
            except (TargetError, VmTargetError) as exc:
                line, tail = boot_failure(exc)
                raise BisectError(f"commit {commit[:12]}: {self.bench.name} failed in the guest: {line}"
                                  + (f"\n{TAIL_MARK}\n{tail}" if tail.strip() else "")) from exc
            self._note_problems(commit, target)
        finally:
            target.close()
        if self.batch is None:
            self.batch = int(result.measurement.header.get("batch") or 0) or None
        return result

    def statistic(self, run: RunResult) -> list[float]:
        """The trial statistic of one run (empty when the run produced nothing)."""
        return primary_statistic(run, self.params)

    def trial(self, commit: str, prepared: _Kernel) -> list[float]:
        """One boot of the commit's kernel and one run in it."""
        return self.statistic(self._trial(commit, prepared))
