"""What a kernel needs to be booted and measured by kbench: config options with the reason
for each, grouped by what asks for them.

``boot`` is always asked; ``kbench.ko`` when kbench.ko is loaded into the guest (every run
but a whole tool's); ``trace`` for ``kbench trace`` and the trace kind (function tracing
and kprobes); ``suites`` for whole tools run in the guest (fio's scratch disk, AIO).
A kernel is asked only what will run on it, so that what is measured carries no
instrument it does not use.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kbench.kernels.errors import KernelConfigError
from kbench.kernels.kconfig import Fragment, Value, fragment_text


@dataclass(frozen=True)
class Requirement:
    option: str
    value: Value
    why: str


def _needs(why: str, *options: str, value: Value = "y") -> tuple[Requirement, ...]:
    return tuple(Requirement(f"CONFIG_{option}", value, why) for option in options)


BOOT: tuple[Requirement, ...] = (
    *_needs("kbench boots x86-64 kernels", "64BIT"),
    *_needs("qemu loads the uncompressed kernel through its PVH entry (faster boots under TCG)", "PVH"),
    *_needs("the guest has 2 CPUs; kbench.ko starts its per-CPU runs together", "SMP"),
    *_needs("the guest console is the serial port ttyS0", "TTY", "SERIAL_8250", "SERIAL_8250_CONSOLE", "PRINTK"),
    *_needs("the kernel's own reports (BUG, WARNING) are what kbench checks the console for", "BUG"),
    *_needs("qemu's -initrd carries the initramfs", "BLK_DEV_INITRD"),
    *_needs("/init mounts devtmpfs, proc, sysfs and tmpfs, and runs a shell script",
            "DEVTMPFS", "DEVTMPFS_MOUNT", "PROC_FS", "PROC_SYSCTL", "SYSFS", "TMPFS", "SHMEM",
            "UNIX98_PTYS", "BINFMT_ELF", "BINFMT_SCRIPT"),
    *_needs("busybox and the static agent and probe use them", "MULTIUSER", "FUTEX", "EPOLL",
            "SIGNALFD", "TIMERFD", "EVENTFD", "POSIX_TIMERS", "FILE_LOCKING", "SYSVIPC", "HIGH_RES_TIMERS"),
    *_needs("the agent's channel is a virtio-serial port (kbench.0) on PCI", "PCI", "VIRTIO_PCI", "VIRTIO_CONSOLE"),
    *_needs("the guest's scratch disk is virtio-blk", "BLOCK", "VIRTIO_BLK"),
    *_needs("the guest powers off (qemu exits) through ACPI", "ACPI"),
    *_needs("loopback networking (busybox ip, network benchmarks)", "NET", "INET", "UNIX"),
    *_needs("measured code is built as production kernels are (-O2, SLUB), not for size",
            "CC_OPTIMIZE_FOR_PERFORMANCE", "SLUB"),
    *_needs("--counters and profiles count with perf events", "PERF_EVENTS"),
)
"""What booting under kbench's qemu (vm/init, kbench-agent, kbench-probe) needs."""

KBENCH_KO: tuple[Requirement, ...] = (
    *_needs("kbench.ko is loaded and unloaded between runs", "MODULES", "MODULE_UNLOAD"),
    *_needs("kbench.ko times kernel functions in place with kretprobes", "KPROBES", "KALLSYMS"),
    *_needs("kbench.ko's entry tracking attaches to the kernel's tracepoints (raw_syscalls, irq, sched)",
            "FTRACE", "FTRACE_SYSCALLS"),
    *_needs("kbench.ko's fib4_lookup and fib6_lookup benchmarks", "IPV6"),
    *_needs("kbench.ko's crc32c benchmark", "CRC32", "LIBCRC32C"),
    *_needs("kbench.ko reads its benchmarks' debugfs and tracefs files", "DEBUG_FS"),
)
"""What kbench.ko needs to build and load."""

TRACE: tuple[Requirement, ...] = (
    *_needs("kbench trace follows kernel functions (function tracer, kprobes)", "FUNCTION_TRACER",
            "DYNAMIC_FTRACE", "KPROBES", "FTRACE"),
)

SUITES: tuple[Requirement, ...] = (
    *_needs("fio's scratch disk is ext2 mounted by the ext4 driver", "EXT4_FS"),
    *_needs("fio and stress-ng use asynchronous I/O", "AIO"),
)

FEATURES: dict[str, tuple[Requirement, ...]] = {
    "boot": BOOT, "kbench.ko": KBENCH_KO, "trace": TRACE, "suites": SUITES,
}
"""Every group, in the order their fragments are merged."""
ALWAYS = frozenset({"boot"})
DEFAULT_FEATURES = frozenset({"boot", "kbench.ko"})
"""What most runs need (a probe or kbench.ko benchmark): ``kbench kernel build``'s default."""


class UnknownFeature(KernelConfigError):
    pass


def checked_features(names: Iterable[str]) -> frozenset[str]:
    """``names`` with ``boot`` added; UnknownFeature naming any that is not a group."""
    chosen = frozenset(names) | ALWAYS
    unknown = sorted(chosen - FEATURES.keys())
    if unknown:
        raise UnknownFeature(f"unknown kernel feature {', '.join(unknown)}: choose from {', '.join(FEATURES)}")
    return chosen


def requirements(features: Iterable[str]) -> tuple[Requirement, ...]:
    """The requirements of ``features`` (and of ``boot``), each option once (its first reason)."""
    chosen = checked_features(features)
    seen: dict[str, Requirement] = {}
    for name, group in FEATURES.items():
        if name in chosen:
            for requirement in group:
                seen.setdefault(requirement.option, requirement)
    return tuple(seen.values())


def requirements_fragment(features: Iterable[str]) -> Fragment:
    """kbench's own fragment for ``features``: every option with its reason as a comment."""
    chosen = requirements(features)
    text = fragment_text({r.option: r.value for r in chosen}, {r.option: r.why for r in chosen})
    chosen_names = ", ".join(name for name in FEATURES if name in checked_features(features))
    return Fragment(f"kbench's options ({chosen_names})", text)
