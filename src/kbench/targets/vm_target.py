"""The VM target: boot a kernel in qemu and run benchmarks inside it.

One boot serves many runs: ``VmTarget`` starts the guest on first use (building
kbench.ko for that kernel, cached by content), loads the module, installs the route
table the route-lookup benchmarks need, and keeps the guest until ``close()``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kbench import children, interrupts
from kbench.contract.guest_setup import SETUP_GUEST_MB, GuestSetup
from kbench.contract.spill import SpillWriter
from kbench.native import NativeToolMissing, find_native
from kbench.resources import find_resource
from kbench.sysinfo.collect import collect_sysinfo
from kbench.targets.base import TIMED_OUT, ProbeInvocation, ProgressCallback, TargetError, TargetInfo
from kbench.targets.guest_sysfs import GuestSysfs
from kbench.targets.kernel_identity import kernel_config_text, kernel_identity
from kbench.targets.kmod_sysfs import SYSFS_ROOT, KbenchModule
from kbench.targets.probe_measurement import EXIT_INTERRUPTED
from kbench.targets.run_bound import MIN_BOUND_S
from kbench.targets.transport import GuestShell
from kbench.targets.vm import (
    GuestRequestError,
    KernelImage,
    VmSession,
    VmTargetError,
    build_module,
    build_tools_cpio,
    build_user_module,
    default_cache_dir,
    resolve_kernel,
)
from kbench.targets.vm.guest_setup import SetupError, SetupPlan, plan_setup, read_facts
from kbench.targets.vm.plugin import InstructionLog
from kbench.targets.vm.qemu import SCRATCH_SERIAL
from kbench.targets.vm.session import Follow

GUEST_OUTPUT = "/tmp/kbench-run.bin"
GUEST_SPILL = "/tmp/kbench-run.spill"
GUEST_MODULE = "/lib/kbench/kbench.ko"
GUEST_EXTRA_DIR = "/lib/kbench/extra"
ROUTES = {"ipv4": ("10.0.0.0/8", 4096, 20), "ipv6": ("2001:db8::/32", 1024, 42)}
"""Route table installed in every guest: 4096 /20s cover 10.0.0.0/8 and 1024 /42s cover
2001:db8::/32, so every random destination of the default prefixes finds a route."""
SCRATCH_MOUNT = "/mnt/scratch"
FIO_SCRATCH_DISK_MB = 2048
"""The scratch disk a guest gets when fio runs in it (a sparse host file: only what fio writes takes space)."""
SCRATCH_MODULES = ("virtio_blk", "ext4", "crc32c_generic")  # ext4 asks the crypto API for crc32c
SCRATCH_SCRIPT = f"""set -e
for m in virtio_blk ext4 crc32c_generic; do modprobe $m 2>/dev/null || true; done  # built in, or missing
dev=
for i in $(seq 100); do
    for b in /sys/block/vd*; do
        [ "$(cat $b/serial 2>/dev/null)" = {SCRATCH_SERIAL} ] && dev=/dev/${{b##*/}}
    done
    [ -n "$dev" ] && [ -b "$dev" ] && break
    sleep 0.1
done
[ -n "$dev" ] || {{ echo "no virtio-blk disk with serial {SCRATCH_SERIAL}" >&2; exit 1; }}
mke2fs -q "$dev" >/dev/null
mkdir -p {SCRATCH_MOUNT}
mount -t ext4 "$dev" {SCRATCH_MOUNT}
chmod 1777 {SCRATCH_MOUNT}
echo "$dev"
"""
"""Guest set-up of the scratch disk; prints the device."""


class VmTarget:
    """A kernel booted with qemu: runs the probe, kbench.ko and tools in it (``Transport``).

    ``suite_tools``: host executables (hackbench, fio, …) to carry into the guest, with
    their libraries, as an extra initramfs archive; a suite run asking for a tool the
    guest lacks boots it again with that tool. ``scratch_disk_mb``: a virtio-blk disk
    on a sparse host file, formatted and mounted at SCRATCH_MOUNT, where suite tools
    get their scratch directories; by default one of FIO_SCRATCH_DISK_MB when fio is
    among the tools, else none (scratch directories then live in the guest's tmpfs /tmp).
    """

    in_guest = True

    def __init__(
        self,
        spec: str,
        *,
        cache_dir: Path | None = None,
        cpus: int = 2,
        memory_mb: int = 1024,
        accel: str = "auto",
        console_log: Path | None = None,
        cmdline_extra: str = "",
        with_module: bool = True,
        extra_modules: Sequence[Path] = (),
        boot_timeout: float = 60.0,
        modules_dir: Path | None = None,
        suite_tools: Sequence[str] = (),
        scratch_disk_mb: int | None = None,
        module_suffixes: Sequence[str | None] = (),
        kernel_features: Sequence[str] = (),
        count_instructions: bool = False,
    ):
        self.spec = spec
        self.cache_dir = cache_dir or default_cache_dir()
        self.cpus = cpus
        self.memory_mb = memory_mb
        self.accel = accel
        self.console_log = console_log
        self.cmdline_extra = cmdline_extra
        self.with_module = with_module
        self.extra_modules = [Path(path) for path in extra_modules]
        # per extra module: built under its name + this suffix (kbench.h, KBENCH_NAME_SUFFIX), or as it is
        self.module_suffixes = list(module_suffixes) or [None] * len(self.extra_modules)
        self.module_benchmarks: list[list[str]] = []  # per extra module: the benchmarks it registered
        self.boot_timeout = boot_timeout  # seconds until a guest that has not booted counts as hung
        self.modules_dir = modules_dir  # for a path spec: the kernel's modules (see resolve_kernel)
        self.suite_tools = tuple(suite_tools)  # host executables put into the guest (extra cpio)
        self.booted_tools: tuple[str, ...] = ()
        self.requested_scratch_mb = scratch_disk_mb  # None: a disk when fio is among the suite tools
        self.scratch_disk_mb = 0  # of the running guest: a virtio-blk disk, ext2, mounted at SCRATCH_MOUNT
        self.scratch_root = "/tmp"  # where suite tools get their scratch directories
        self.extra_loaded: list[str] = []
        self.extra_kernel_features = tuple(kernel_features)  # e.g. "trace": what a tree: kernel is built with
        self.kernel: KernelImage | None = None
        self.session: VmSession | None = None
        self.module: KbenchModule | None = None
        self.module_error: str | None = None
        self._details: dict[str, Any] = {}
        self.guest_setup: SetupPlan | None = None  # LKP's set-up, made again at every boot
        # kbench's TCG plugin counts the instructions of kbench's marked regions (docs/instructions.md)
        self.count_instructions = count_instructions
        self.instruction_log: InstructionLog | None = None
        self._instruction_dir: Path | None = None

    # -- life cycle -----------------------------------------------------------------

    def __enter__(self) -> VmTarget:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self) -> VmSession:
        """Boot the guest (once) and load kbench.ko; returns the session."""
        if self.session is not None:
            return self.session
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            self.kernel = resolve_kernel(self.spec, self.cache_dir, modules_dir=self.modules_dir,
                                         features=self.kernel_features())
            files: dict[str, Path] = {"/bin/kbench-routes": find_native("kbench-routes")}
            ko = self._build_kbench_ko(self.kernel) if self.with_module or self.extra_modules else None
            if ko is not None:
                files[GUEST_MODULE] = ko
            extra = [self._user_module(path, self.kernel, suffix)
                     for path, suffix in zip(self.extra_modules, self.module_suffixes, strict=True)]
            if extra and ko is None:
                raise TargetError(f"user benchmark modules need kbench.ko, which did not build: {self.module_error}")
            for path in extra:
                files[f"{GUEST_EXTRA_DIR}/{path.name}"] = path
            appended = self._tools_archive()
            self.scratch_disk_mb = self._scratch_mb()
            if self.kernel.modules_dir is None and self.requested_scratch_mb is None:
                self.scratch_disk_mb = 0  # no virtio_blk/ext4 modules to load: fio uses tmpfs
            self.scratch_root = "/tmp"
            plugin = self._instruction_plugin()
            self.session = VmSession(
                self.kernel,
                initramfs_files=files,
                cache_dir=self.cache_dir,
                cpus=self.cpus,
                memory_mb=self.memory_mb,
                accel="tcg" if plugin is not None else self.accel,  # a plugin runs under TCG only
                console_log=self.console_log,
                cmdline_extra=" ".join(c for c in (self.cmdline_extra, self.guest_setup and self.guest_setup.cmdline)
                                       if c),
                boot_timeout=self.boot_timeout,
                initramfs_extra=appended,
                scratch_disk_mb=self.scratch_disk_mb,
                extra_modules=(*(SCRATCH_MODULES if self.scratch_disk_mb else ()),
                               *(self.guest_setup.modules if self.guest_setup else ())),
                qemu_plugin=plugin,
            )
            if self.scratch_disk_mb:
                self._mount_scratch(self.session)
            if self.guest_setup is not None:
                self._make_setup(self.session, self.guest_setup)
            self.booted_tools = self.suite_tools
            if ko is not None:
                self._load_module(self.session)
            self.module_benchmarks = []
            for path in extra:
                self.module_benchmarks.append(self._load_extra(self.session, path))
        except (VmTargetError, NativeToolMissing) as exc:
            self.close()
            raise TargetError(str(exc)) from exc
        return self.session

    def set_up_guest(self, setup: GuestSetup) -> dict[str, Any]:
        """LKP's set-up (``kbench.targets.vm.guest_setup``): boot again with what it needs (modules,
        mkfs and mdadm, memmap= for pmem, the virtio disk, more memory for ramdisks), make it, and
        have suite tools write on its file system. Made again after any later boot. Returns what
        was made (stored with every run: ``info().details["guest_setup"]``). An empty ``setup`` undoes
        an earlier one: a guest without it again, booted afresh (with the memory it was given)."""
        if not setup.as_dict():
            if self.guest_setup is not None:
                self.guest_setup = None
                self._details.pop("guest_setup", None)
                self.close()
                self.module, self.extra_loaded = None, []
                self.start()
            return {}
        if setup.has_storage:
            self.memory_mb = max(self.memory_mb, SETUP_GUEST_MB)
        try:
            plan = plan_setup(setup, self.memory_mb)
        except SetupError as exc:
            raise TargetError(str(exc)) from exc
        if plan == self.guest_setup and self.session is not None:
            return dict(self._details["guest_setup"])  # made at this boot already
        self.guest_setup = plan
        self.suite_tools = (*self.suite_tools, *(t for t in plan.tools if t not in self.suite_tools))
        if plan.virtio_disk_mb:
            self.requested_scratch_mb = max(self.requested_scratch_mb or 0, plan.virtio_disk_mb)
        self.close()
        self.module, self.extra_loaded = None, []
        self.start()
        return dict(self._details["guest_setup"])

    def _make_setup(self, session: VmSession, plan: SetupPlan) -> None:
        started = time.monotonic()
        done = session.exec(["sh", "-c", plan.script], timeout=600)
        if not done.ok:
            said = done.stderr.decode(errors="replace").strip().splitlines()
            raise TargetError(f"the guest could not make LKP's set-up ({plan.record.get('made', 'kernel settings')}): "
                              f"{said[-1] if said else f'exit status {done.rc}'}")
        facts = read_facts(done.text)
        mounts = facts.pop("mount", [])
        devices = facts.pop("device", [])
        if mounts:
            self.scratch_root = mounts[0]
        self._details["guest_setup"] = {
            **plan.record,
            **({"devices": {dev: int(size) for dev, _, size in (d.rpartition(":") for d in devices)},
                "mounts": mounts, "benchmark_dir": self.scratch_root, "memory_mb": self.memory_mb} if devices else {}),
            **({"cmdline": plan.cmdline} if plan.cmdline else {}),
            **{name: values[-1] for name, values in facts.items()},
            "setup_seconds": round(time.monotonic() - started, 3),
        }

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None
        if self._instruction_dir is not None and self.count_instructions:
            children.remove_scratch_dir(self._instruction_dir)
            self._instruction_dir, self.instruction_log = None, None

    def _instruction_plugin(self) -> str | None:
        """``-plugin``'s value for kbench's TCG plugin when this guest counts instructions (its
        records go to a file of a scratch directory of the host, kept across boots)."""
        if not self.count_instructions:
            return None
        if self.instruction_log is None:
            self._instruction_dir = children.make_scratch_dir("kbench-icount-")
            self.instruction_log = InstructionLog(self._instruction_dir / "regions.bin")
        option = self.instruction_log.plugin_option()
        self._details["instructions"] = {
            "plugin": option.split(",", 1)[0].removeprefix("file="),
            "accel": "tcg (a TCG plugin counts the instructions of kbench's marked regions; it cannot run under KVM)",
        }
        return option

    def kernel_features(self) -> set[str]:
        """What a kernel kbench builds for this guest (a ``tree:`` spec) is configured for:
        kbench.ko when it is loaded, whole tools' needs when tools other than perf (which
        needs only perf events, always there) are carried, and the features asked."""
        features = {"boot", *self.extra_kernel_features}
        if self.with_module or self.extra_modules:
            features.add("kbench.ko")
        if any(Path(tool).name != "perf" for tool in self.suite_tools):
            features.add("suites")
        return features

    def _scratch_mb(self) -> int:
        if self.requested_scratch_mb is not None:
            return self.requested_scratch_mb
        return FIO_SCRATCH_DISK_MB if "fio" in self.suite_tools else 0

    def _mount_scratch(self, session: VmSession) -> None:
        """Format the scratch disk (busybox mke2fs: ext2, mounted by the ext4 driver) and mount it."""
        started = time.monotonic()
        done = session.exec(["sh", "-c", SCRATCH_SCRIPT], timeout=300)
        if not done.ok:
            raise TargetError(f"the guest could not set up its scratch disk: {done.stderr.decode(errors='replace')}")
        self.scratch_root = SCRATCH_MOUNT
        self._details["scratch_disk"] = {
            "mb": self.scratch_disk_mb, "device": done.text.strip(), "fs": "ext2 (ext4 driver)",
            "mount": SCRATCH_MOUNT, "setup_seconds": round(time.monotonic() - started, 3),
        }

    def _tools_archive(self) -> list[Path]:
        """The extra cpio with the suite tools and their libraries (none without suites)."""
        if not self.suite_tools:
            return []
        started = time.monotonic()
        archive = build_tools_cpio(self.suite_tools, self.cache_dir)
        self._details["suite_tools"] = {
            "tools": list(self.suite_tools),
            "archive": archive.name,
            "bytes": archive.stat().st_size,
            "build_seconds": round(time.monotonic() - started, 3),
        }
        return [archive]

    def _build_kbench_ko(self, kernel: KernelImage) -> Path | None:
        try:
            built = build_module(find_resource("kmod"), kernel, self.cache_dir)
        except VmTargetError as exc:
            self.module_error = str(exc)
            return None
        ko = next((path for path in built if path.name == "kbench.ko"), None)
        if ko is None:
            self.module_error = f"building kmod/ produced {[p.name for p in built]}, not kbench.ko"
        return ko

    def _user_module(self, path: Path, kernel: KernelImage, suffix: str | None = None) -> Path:
        if path.suffix == ".ko":
            if suffix is not None:
                raise TargetError(f"{path}: a built module cannot be renamed; give its source (.c) to load two "
                                  "versions of it at once")
            return path
        return build_user_module(path, kernel, self.cache_dir, suffix)

    def _load_extra(self, session: VmSession, path: Path) -> list[str]:
        """insmod the module; returns the benchmarks it registered."""
        listing = f"{SYSFS_ROOT}/benchmarks"
        before = session.read_file(listing).decode().split() if self.module is not None else []
        loaded = session.exec(["insmod", f"{GUEST_EXTRA_DIR}/{path.name}"], timeout=60)
        if loaded.rc != 0:
            raise TargetError(f"insmod {path.name} failed: {loaded.stderr.decode(errors='replace').strip()}")
        self.extra_loaded.append(path.name)
        after = session.read_file(listing).decode().split() if self.module is not None else []
        return [name for name in after if name not in before]

    def _load_module(self, session: VmSession) -> None:
        loaded = session.exec(["insmod", GUEST_MODULE], timeout=60)
        if loaded.rc != 0:
            self.module_error = f"insmod kbench.ko failed: {loaded.stderr.decode(errors='replace').strip()}"
            return
        v4, v6 = ROUTES["ipv4"], ROUTES["ipv6"]
        routes = session.exec(
            ["kbench-routes", "-4", v4[0], "-n", str(v4[1]), "-l", str(v4[2]),
             "-6", v6[0], "-N", str(v6[1]), "-L", str(v6[2])],
            timeout=120,
        )
        if routes.rc != 0:
            raise TargetError(f"installing the guest route table failed: {routes.stderr.decode(errors='replace')}")
        self._details["routes"] = routes.text.strip()
        self.module = KbenchModule(GuestSysfs(session))

    # -- Target interface -------------------------------------------------------------

    def info(self) -> TargetInfo:
        session = self.start()
        version = session.exec(["cat", "/proc/sys/kernel/version"], timeout=30).text.strip()
        assert self.kernel is not None
        config = kernel_config_text(self.kernel.config)
        return TargetInfo(
            kind="vm",
            kernel_release=session.guest_release or self.kernel.release,
            kernel_version=version,
            accel=session.accel,
            build_id=self.kernel.build_id,
            kernel_config=config,
            details={
                "kernel": kernel_identity(self.kernel, config),
                "spec": self.spec,
                "kernel_source": self.kernel.source,
                "accel_reason": session.accel_reason,
                **({"tcg_thread": session.tcg_thread, "tcg_thread_reason": session.tcg_thread_reason}
                   if session.tcg_thread else {}),
                "boot_seconds": session.boot_seconds,
                "cpus": self.cpus,
                "memory_mb": self.memory_mb,
                "console_log": str(session.console_log),
                "kbench_ko": "loaded" if self.module else (self.module_error or "not loaded (not needed by this run)"),
                **self._details,
            },
        )

    def sysinfo(self) -> dict[str, Any]:
        session = self.start()

        def read(path: str) -> str | None:
            result = session.exec(["cat", path], timeout=30)
            return result.text.strip() if result.rc == 0 else None

        info = collect_sysinfo(read, local=False)
        info["virtualization"]["vm"] = f"qemu-{session.accel}"
        info["vm_config"] = {"cpus": self.cpus, "memory_mb": self.memory_mb}
        if "guest_setup" in self._details:  # LKP's set-up of this boot, stored with each run
            info["guest_setup"] = self._details["guest_setup"]
        info["host"] = collect_sysinfo()
        return info

    # -- transport ---------------------------------------------------------------------

    @contextmanager
    def kbench_module(self, benchmark: str) -> Iterator[KbenchModule]:
        """The kbench.ko loaded at boot (TargetError saying why there is none)."""
        self.start()
        if self.module is None:
            raise TargetError(f"{benchmark} needs kbench.ko in the guest: {self.module_error}")
        yield self.module

    def guest_shell(self, tools: Sequence[str]) -> GuestShell:
        """The guest, booted again with ``tools`` if it was booted without one of them."""
        missing = [tool for tool in tools if tool not in self.booted_tools]
        if missing:
            self.suite_tools = (*self.suite_tools, *(t for t in tools if t not in self.suite_tools))
            self.close()
            self.module, self.extra_loaded = None, []  # loaded again by the new boot
        session = self.start()
        return GuestShell(session, self.scratch_root)

    def run_probe(
        self, args: Sequence[str], progress: ProgressCallback | None = None, bound: float | None = None,
        spill: Path | None = None,
    ) -> ProbeInvocation:
        """Run the probe in the guest, stopped at ``bound`` seconds (default ``MIN_BOUND_S``);
        Ctrl-C or SIGTERM stops it there, keeping its samples. No progress from the guest.
        With ``spill``, the guest probe spills to a guest file that the agent follows, and
        the host copies it to ``spill`` as it arrives (the same bytes)."""
        session = self.start()
        output = GUEST_OUTPUT
        probe_args = ["kbench-probe", *args[:1], "--output", output, *args[1:]]
        writer = None
        if spill is not None:
            probe_args += ["--spill", GUEST_SPILL]
            writer = SpillWriter(spill)  # the guest's spill carries its own header
        follow = None if writer is None else Follow(GUEST_SPILL, writer.append)
        interrupted = False
        try:
            result = session.exec(probe_args, timeout=bound if bound is not None else MIN_BOUND_S, follow=follow)
            rc, stderr = (TIMED_OUT if result.timed_out else result.rc), result.stderr.decode(errors="replace")
        except KeyboardInterrupt:
            interrupted, rc, stderr = True, EXIT_INTERRUPTED, ""
        finally:
            if writer is not None:
                writer.close()
        try:
            with interrupts.keep_first() as kept:  # the samples are in the guest: fetch them
                try:
                    data = session.read_file(output) if rc in (0, EXIT_INTERRUPTED) else b""
                except GuestRequestError:
                    data = b""  # interrupted before the probe wrote anything
                session.exec(["rm", "-f", output, GUEST_SPILL], timeout=30)
        except TargetError as exc:
            if interrupted:  # interrupted again, and the guest stopped: the spill has what was taken
                raise interrupts.interruption() from exc
            raise
        interrupted = interrupted or kept.stopped
        return ProbeInvocation(stdout=data, stderr=stderr, exit_code=rc,
                               interrupted=interrupted or rc == EXIT_INTERRUPTED)

    def console_tail(self, lines: int = 40) -> str:
        if self.session is None:
            return ""
        return "\n".join(self.session.console_text().splitlines()[-lines:])


def qemu_available() -> bool:
    return shutil.which("qemu-system-x86_64") is not None
