"""In-kernel benchmarks on the running kernel: build, load, run and unload kbench.ko.

When the running kernel cannot do it (not root, module loading disabled, no headers)
the error says exactly why and how to run in a VM instead.
"""

from __future__ import annotations

import os
import platform
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from kbench import children
from kbench.resources import find_resource
from kbench.targets.base import TargetError
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule, LiveSamples, SysfsError

if TYPE_CHECKING:
    from kbench.targets.vm import KernelImage

VM_HINT = "run it in a VM instead: add --kernel deb:<release> (e.g. --kernel deb:6.1.0-56-amd64)"


class LocalSysfs:
    """SysfsIO on this machine's /sys."""

    def read_text(self, path: str, timeout: float | None = None, live: LiveSamples | None = None) -> str:
        """The attribute's text; ``live`` is followed by a thread of its own while it is read
        (the read of ``run`` blocks this one in the kernel for the whole run)."""
        follower = None if live is None else _Follower(live)
        try:
            return Path(path).read_text()
        except OSError as exc:
            raise SysfsError(path, exc.errno or 5) from exc
        finally:
            if follower is not None:
                follower.finish()

    def read_bytes(self, path: str) -> bytes:
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise SysfsError(path, exc.errno or 5) from exc

    def write_values(self, directory: str, values: Mapping[str, str]) -> None:
        for name, value in values.items():
            path = f"{directory}/{name}"
            try:
                with open(path, "w") as attribute:
                    attribute.write(value)
            except OSError as exc:
                raise SysfsError(path, exc.errno or 5) from exc


class _Follower(threading.Thread):
    """Copies what a live file gains to its sink every FOLLOW_PERIOD_S until ``finish``."""

    def __init__(self, live: LiveSamples):
        super().__init__(name="kbench-live-samples", daemon=True)
        self.live = live
        self.offset = 0
        self.stopping = threading.Event()
        self.start()

    def run(self) -> None:
        while not self.stopping.wait(FOLLOW_PERIOD_S):
            self._copy()

    def _copy(self) -> None:
        try:
            with open(self.live.path, "rb", buffering=0) as live:
                while chunk := os.pread(live.fileno(), 1 << 20, self.offset):
                    self.live.sink(chunk)
                    self.offset += len(chunk)
        except OSError:
            return  # an older kbench.ko, or the run has not begun: nothing to copy yet

    def finish(self) -> None:
        self.stopping.set()
        self.join()


FOLLOW_PERIOD_S = 0.25


def why_modules_cannot_load(release: str) -> str | None:
    """A sentence saying why kbench.ko cannot be loaded here, or None if it can."""
    if os.geteuid() != 0:
        return "loading kbench.ko needs root"
    cmdline = Path("/proc/cmdline").read_text().split() if Path("/proc/cmdline").exists() else []
    if "nomodule" in cmdline:
        return "this kernel was booted with `nomodule`: it does not load modules"
    disabled = Path("/proc/sys/kernel/modules_disabled")
    if disabled.exists() and disabled.read_text().strip() == "1":
        return "module loading is disabled (/proc/sys/kernel/modules_disabled = 1)"
    if not Path("/proc/modules").exists():
        return "this kernel has no module support (CONFIG_MODULES is off)"
    if not Path(f"/lib/modules/{release}/build").is_dir():
        return f"no kernel headers for {release} (install linux-headers-{release})"
    return None


LOCAL_KERNEL_HINT = (
    "give --kernel deb:<release> to run it in a kernel booted in qemu, or --local-kernel to load "
    "kbench.ko into the running kernel"
)


def what_loads_locally(benchmark: str) -> str:
    """The sentence saying what a local kfunc run loads into this machine's kernel."""
    release = platform.release()
    return (f"{benchmark} runs inside a kernel: without --kernel, kbench builds kbench.ko from "
            f"{find_resource('kmod')} against /lib/modules/{release}/build, loads it into the running "
            f"kernel {release} (insmod) and unloads it afterwards")


@contextmanager
def kbench_ko_loaded(benchmark: str, *, allowed: bool = False) -> Iterator[KbenchModule]:
    """kbench.ko in the running kernel for a run of ``benchmark``: the loaded one, or built,
    loaded (``allowed``: the user agreed) and unloaded afterwards."""
    release = platform.release()
    if not allowed and not Path(SYSFS_ROOT).is_dir():
        raise TargetError(f"{what_loads_locally(benchmark)}; {LOCAL_KERNEL_HINT}")
    reason = why_modules_cannot_load(release)
    if reason is not None:
        raise TargetError(f"{benchmark} cannot run on the local kernel {release}: {reason}; {VM_HINT}")
    loaded_here = False
    if not Path(SYSFS_ROOT).is_dir():
        ko = _build_for_running_kernel(release)
        result = children.run(["insmod", str(ko)], capture_output=True, text=True)
        if result.returncode != 0:
            raise TargetError(f"insmod {ko} failed: {result.stderr.strip()}; {VM_HINT}")
        loaded_here = True
    try:
        yield KbenchModule(LocalSysfs())
    finally:
        if loaded_here:
            children.run(["rmmod", "kbench"], capture_output=True)


@contextmanager
def user_modules_loaded(
    modules: Sequence[Path], suffixes: Sequence[str | None] = (), *, allowed: bool = False
) -> Iterator[list[list[str]]]:
    """kbench.ko and the user's benchmark modules (sources or .ko) in the running kernel for as
    long as the context lasts (each source built for it, under its name + its suffix when
    given); yields, per module, the benchmarks it registered. What this context loaded it
    unloads, in reverse order."""
    release = platform.release()
    names = ", ".join(str(m) for m in modules)
    if not allowed:
        raise TargetError(f"loading {names} into the running kernel {release} needs --local-kernel; {VM_HINT}")
    reason = why_modules_cannot_load(release)
    if reason is not None:
        raise TargetError(f"{names} cannot be loaded into the local kernel {release}: {reason}; {VM_HINT}")
    suffixes = list(suffixes) or [None] * len(modules)
    loaded: list[str] = []
    try:
        if not Path(SYSFS_ROOT).is_dir():
            _insmod(_build_for_running_kernel(release))
            loaded.append("kbench")
        registered = []
        for module, suffix in zip(modules, suffixes, strict=True):
            ko = module if module.suffix == ".ko" else _build_user_module(module, release, suffix)
            before = set(_registered())
            _insmod(ko)
            loaded.append(ko.stem)
            registered.append([name for name in _registered() if name not in before])
        yield registered
    finally:
        for name in reversed(loaded):
            children.run(["rmmod", name], capture_output=True)


def _registered() -> list[str]:
    return Path(f"{SYSFS_ROOT}/benchmarks").read_text().split()


def _insmod(ko: Path) -> None:
    result = children.run(["insmod", str(ko)], capture_output=True, text=True)
    if result.returncode != 0:
        raise TargetError(f"insmod {ko} failed: {result.stderr.strip()}; {VM_HINT}")


def _running_kernel(release: str) -> KernelImage:
    from kbench.targets.vm import KernelImage

    return KernelImage(release=release, vmlinuz=Path(f"/boot/vmlinuz-{release}"),
                       modules_dir=Path(f"/lib/modules/{release}"), build_dir=Path(f"/lib/modules/{release}/build"),
                       spec="local", source="running")


def _build_user_module(source: Path, release: str, suffix: str | None) -> Path:
    from kbench.targets.vm import VmTargetError, build_user_module, default_cache_dir

    try:
        return build_user_module(source, _running_kernel(release), default_cache_dir(), suffix)
    except VmTargetError as exc:
        raise TargetError(f"building {source} for {release} failed: {exc}") from exc


def _build_for_running_kernel(release: str) -> Path:
    from kbench.targets.vm import VmTargetError, build_module, default_cache_dir

    kernel = _running_kernel(release)
    try:
        built = build_module(find_resource("kmod"), kernel, default_cache_dir())
    except VmTargetError as exc:
        raise TargetError(f"building kbench.ko for {release} failed: {exc}") from exc
    for path in built:
        if path.name == "kbench.ko":
            return path
    raise TargetError(f"building kmod/ for {release} produced no kbench.ko")
