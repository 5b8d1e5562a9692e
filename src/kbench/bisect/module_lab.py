"""Real measurements for a bisection of an out-of-tree benchmark module, in a kernel in qemu.

The commits are those of a repository holding a user benchmark module (``NAME.c`` that
includes kbench.h and calls ``kbench_register``, or a module directory with a Kbuild).
Building a commit: a worktree of it, the user's optional ``build`` command there, then
``build_user_module`` for the lab's kernel (cached by content); a failure of either skips
the commit with a one-line reason. One ``VmTarget`` (kbench.ko loaded) is booted on first
use and kept until ``close()``; each built commit's .ko is copied into the guest once.

A trial of commit X: ``insmod`` X's .ko, one stored run (``execute_run``, tags
``bisect:<id>`` and ``commit:<sha12>``) of its ``kfunc.<benchmark>``, ``rmmod`` (always,
also when the run failed). Only one commit's module is ever loaded, so every commit
registers the same benchmark name without clashing. Its statistic is ``trial_statistic``
(the median of the steady-state part) of the per-call cycles. All trials share one batch
(calls per sample): ``batch``, or calibrated once on the first commit measured, so a
commit's slower call does not change how it is timed.

The benchmark's name, when not given, is found after the first ``insmod``: the one
benchmark in /sys/kernel/kbench/benchmarks that kbench.ko alone did not list.

``round`` interleaves like ``CommandLab.round``: one trial of each commit asked for per
round, in a random order.
``guest_problems()`` lists BUG/WARNING/Oops lines of the guest's kernel log; ``close()``
keeps them in ``problems`` before powering the guest off.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbench.bisect.driver import BisectError
from kbench.bisect.git import Worktrees
from kbench.bisect.labkit import (
    DEFAULT_BUILD_TIMEOUT_S,
    LabBase,
    build_failure_reason,
    primary_statistic,
    run_build_command,
)
from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.engine.runner import RunResult, execute_run
from kbench.kinds.instructions.benchmark import METRIC as INSTRUCTIONS
from kbench.kinds.instructions.benchmark import counted
from kbench.kinds.instructions.run import counted_request
from kbench.kinds.kfunc.loaded import describe
from kbench.store.db import Store
from kbench.sysinfo.collect import collect_sysinfo
from kbench.targets.base import Target, TargetError, TargetInfo
from kbench.targets.transport import RunKind
from kbench.targets.vm import (
    KernelImage,
    ModuleBuildError,
    VmSession,
    VmTargetError,
    build_user_module,
    default_cache_dir,
    resolve_kernel,
)
from kbench.targets.vm.console import PROBLEM_RE
from kbench.targets.vm_target import VmTarget

GUEST_DIR = "/lib/kbench/bisect"
BENCHMARKS_FILE = "/sys/kernel/kbench/benchmarks"


class _Guest:
    """The lab's VmTarget as ``execute_run`` sees it: the guest's inventory is read once per boot
    (about 0.7 s of guest commands under TCG, more than a short trial), the host's every run."""

    def __init__(self, target: VmTarget):
        self.target = target
        self._info: TargetInfo | None = None
        self._sysinfo: dict[str, Any] | None = None

    def info(self) -> TargetInfo:
        if self._info is None:
            self._info = self.target.info()
        return self._info

    def sysinfo(self) -> dict[str, Any]:
        if self._sysinfo is None:
            self._sysinfo = self.target.sysinfo()
        return {**self._sysinfo, "host": collect_sysinfo()}

    def wrap_run(
        self, benchmark: Benchmark, request: RunRequest, run: Callable[[Target], Measurement], kind: RunKind
    ) -> Measurement:
        return run(self.target)


class ModuleLab(LabBase[str]):
    def __init__(
        self, store: Store, *, tag: str, repo: Path, worktrees: Worktrees, build: str | None, module: str,
        benchmark: str | None, kernel: str, samples: int, params: dict[str, str], seed: int,
        batch: int | None = None, cache_dir: Path | None = None, console_log: Path | None = None,
        extra_tags: tuple[str, ...] = (), build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S, metric: str = "time",
    ):
        if Path(module).is_absolute() or ".." in Path(module).parts:
            raise ValueError(f"module must be a path inside the repository, got {module!r}")
        if samples < 1:
            raise ValueError(f"need samples >= 1, got {samples}")
        self.store = store
        self.tag = tag
        self.extra_tags = extra_tags
        super().__init__(repo, seed, build_timeout_s)
        self.worktrees = worktrees
        self.build_cmd = build
        self.module = module
        self.benchmark = benchmark.removeprefix("kfunc.") if benchmark else None
        self.kernel = kernel
        self.samples = samples
        self.params = dict(params)
        self.batch = batch
        self.cache_dir = cache_dir or default_cache_dir()
        self.console_log = console_log
        self.counting = metric == INSTRUCTIONS  # counted by kbench's TCG plugin instead of timed
        self.target: VmTarget | None = None
        self.builtin: list[str] | None = None  # kbench.ko's own benchmarks, before any user module
        self._image: KernelImage | None = None
        self._guest: _Guest | None = None
        self._kos: dict[str, Path] = {}  # commit → its .ko on the host (in the build cache)
        self._pushed: set[str] = set()
        self._benchmarks: dict[str, Benchmark] = {}

    # -- life cycle -------------------------------------------------------------------

    def close(self) -> None:
        """Keep the guest's kernel-log problems in ``problems``, then power the guest off."""
        if self.target is None:
            return
        try:
            self.problems = self.guest_problems()
        except (VmTargetError, TargetError, OSError):
            self.problems = self.target.session.console_problems() if self.target.session else []
        finally:
            self.target.close()
            self.target = None
            self._guest = None
            self._pushed.clear()

    def guest_problems(self) -> list[str]:
        """BUG/WARNING/Oops/lockup lines of the guest's kernel log (dmesg and console), oldest first."""
        if self.target is None or self.target.session is None:
            return []
        session = self.target.session
        found = [m.group(0).strip() for m in PROBLEM_RE.finditer(session.dmesg())]
        found += [line for line in session.console_problems() if line not in found]
        return found

    def _kernel_image(self) -> KernelImage:
        if self._image is None:
            try:
                self._image = resolve_kernel(self.kernel, self.cache_dir)
            except VmTargetError as exc:
                raise BisectError(f"kernel {self.kernel}: {exc}") from exc
        return self._image

    def _session(self) -> VmSession:
        """The guest (booted on first use), with kbench.ko loaded and the bisect directory made."""
        if self.target is None:
            target = VmTarget(self.kernel, cache_dir=self.cache_dir, console_log=self.console_log,
                              count_instructions=self.counting)
            self.target = target
            try:
                session = target.start()
            except TargetError as exc:
                self.target = None
                raise BisectError(f"booting {self.kernel} failed: {exc}") from exc
            if target.module is None:
                self.close()
                raise BisectError(f"kbench.ko is not loaded in {self.kernel}: {target.module_error}")
            made = session.exec(["mkdir", "-p", GUEST_DIR], timeout=30)
            if made.rc != 0:
                self.close()
                raise BisectError(f"mkdir {GUEST_DIR} in the guest failed: {made.stderr.decode(errors='replace')}")
            self.builtin = target.module.benchmarks()
            self._guest = _Guest(target)
        assert self.target is not None and self.target.session is not None
        return self.target.session

    # -- building ---------------------------------------------------------------------

    def build(self, commit: str) -> str | None:
        path = self.worktrees.add(commit)
        try:
            error = run_build_command(self.build_cmd, path, timeout_s=self.build_timeout_s) if self.build_cmd else None
            if error is not None:
                return error
            source = path / self.module
            if not source.exists():
                return f"{self.module}: not in this commit"
            try:
                ko = build_user_module(source, self._kernel_image(), self.cache_dir)
            except ModuleBuildError as exc:
                return f"module build: {build_failure_reason(str(exc))}"
        finally:
            # The .ko lives in the build cache; the worktree is not needed any more.
            self.worktrees.remove(commit)
        self._kos[commit] = ko
        self._pushed.discard(commit)
        return None

    def prepare(self, commit: str) -> str:
        """Build ``commit`` if needed and copy its .ko into the guest; its guest path."""
        if commit not in self._kos:
            error = self.build(commit)
            if error is not None:
                raise BisectError(f"commit {commit[:12]} no longer builds: {error}")
        session = self._session()
        guest_path = f"{GUEST_DIR}/{commit[:12]}.ko"
        if commit not in self._pushed:
            try:
                session.write_file(guest_path, self._kos[commit].read_bytes())
            except VmTargetError as exc:
                raise BisectError(f"copying the module of {commit[:12]} into the guest failed: {exc}") from exc
            self._pushed.add(commit)
        return guest_path

    # -- measuring --------------------------------------------------------------------

    def _benchmark_of(self, commit: str, loaded: list[str]) -> Benchmark:
        """The benchmark commit's module registered (``loaded``: the guest's list with it loaded)."""
        if commit in self._benchmarks:
            return self._benchmarks[commit]
        assert self.target is not None and self.target.module is not None and self.builtin is not None
        added = [name for name in loaded if name not in self.builtin]
        if self.benchmark is None:
            if len(added) != 1:
                found = ", ".join(f"kfunc.{name}" for name in added) or "none"
                raise BisectError(
                    f"commit {commit[:12]}: cannot tell which benchmark to measure: its module registered "
                    f"{found}; name it (the kfunc benchmark the module registers)"
                )
            self.benchmark = added[0]
        if self.benchmark not in loaded:
            found = ", ".join(f"kfunc.{name}" for name in added) or "no benchmark"
            raise BisectError(f"commit {commit[:12]}: its module does not register kfunc.{self.benchmark} "
                              f"(it registered {found})")
        bench = describe(self.target.module, self.benchmark)
        try:
            bench.validate_params(self.params)
        except ValueError as exc:
            raise BisectError(f"commit {commit[:12]}: {exc}") from exc
        self._benchmarks[commit] = bench
        return bench

    def _trial(self, commit: str, guest_path: str) -> RunResult:
        session = self._session()
        assert self.target is not None and self.target.module is not None and self._guest is not None
        name = _module_name(self._kos[commit])
        inserted = session.exec(["insmod", guest_path], timeout=120)
        if inserted.rc != 0:
            message = inserted.stderr.decode(errors="replace").strip() or f"exit {inserted.rc}"
            # The kernel names the module in what it logs about a failed load (unknown symbols, ...).
            said = [line.strip() for line in session.dmesg().splitlines() if name in line][-3:]
            raise BisectError(f"commit {commit[:12]}: insmod {name}.ko failed: {message}"
                              + (f" (kernel log: {' | '.join(said)})" if said else ""))
        failed = True
        try:
            bench = self._benchmark_of(commit, self.target.module.benchmarks())
            if self.counting:
                bench = counted(bench)
                self.batch = counted_request(bench, RunRequest(bench.name, batch=self.batch)).batch
            if self.batch is None:
                probe = RunRequest(benchmark=bench.name, params=self.params, samples=self.samples)
                self.batch = self.target.module.calibrate_batch(bench, probe)
            request = RunRequest(
                benchmark=bench.name, params=self.params, samples=self.samples, batch=self.batch,
                tags=(self.tag, *self.extra_tags, f"commit:{commit[:12]}"),
            )
            if self.counting:
                request = counted_request(bench, request)
            try:
                result = execute_run(self.store, bench, request, self._guest)
            except TargetError as exc:
                raise BisectError(f"commit {commit[:12]}: {bench.name} failed in the guest: {exc}") from exc
            failed = False
            return result
        finally:
            removed = _rmmod(session, name)
            if removed is not None and not failed:
                raise BisectError(f"commit {commit[:12]}: rmmod {name} failed: {removed}")

    def statistic(self, run: RunResult) -> list[float]:
        """The trial statistic of one run (empty when the run produced nothing)."""
        return primary_statistic(run, self.params)

    def trial(self, commit: str, prepared: str) -> list[float]:
        return self.statistic(self._trial(commit, prepared))


def _module_name(ko: Path) -> str:
    """The name the kernel knows a module by: its .ko file's stem, '-' read as '_'."""
    return ko.stem.replace("-", "_")


def _rmmod(session: VmSession, name: str) -> str | None:
    """Unload module ``name``; None when it is gone, else why not."""
    try:
        removed = session.exec(["rmmod", name], timeout=120)
    except VmTargetError as exc:
        return str(exc)
    if removed.rc != 0:
        return removed.stderr.decode(errors="replace").strip() or f"exit {removed.rc}"
    return None
