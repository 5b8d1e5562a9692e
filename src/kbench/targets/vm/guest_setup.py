"""LKP's set-up in a guest: storage (``disk``, ``fs``, ``md``, ``nr_pmem``, ``bp_memmap``) and kernel
settings (THP, latency statistics, pid_max); what to boot with and the script that makes it.

``plan_setup`` turns a job's ``GuestSetup`` into a ``SetupPlan`` for a guest of ``memory_mb``:

- ``NBRD_SIZE``: ``modprobe brd rd_nr=N rd_size=KiB`` (``/dev/ram0`` ...). Ramdisks live in the
  guest's memory, so together they get at most 1/STORAGE_SHARE of it: each is the size asked or
  that share / N, whichever is smaller (whole MiB).
- ``Npmem`` / ``nr_pmem``: N regions the kernel treats as persistent memory, reserved at boot with
  ``memmap=SIZE!START`` (LKP's ``bp_memmap``), found by ``nd_e820`` and served by ``nd_pmem``
  (``/dev/pmem0`` ...). Sized like ramdisks, placed from the middle of the guest's memory with
  2 MiB between regions (adjacent regions of one type would merge into one); the memmap asked
  (``96G!18G``) is stored beside the one made.
- ``1HDD`` / ``1SSD``: the guest's virtio-blk disk (a sparse host file of VIRTIO_DISK_MB).
- ``md: RAID0`` ...: ``mdadm --create /dev/md0`` over the devices (the host's mdadm, carried in).
- ``fs``: ``mkfs -t FS`` with LKP's options (xfs ``-f``, ext* ``-q -F``, btrfs and f2fs ``-f``) on each
  device (or the array), mounted at ``/fs/<device>`` (xfs with LKP's ``-o inode64``, plus
  ``mount_option``); benchmarks write under the first, as LKP's do.

- ``thp_enabled`` / ``thp_defrag``: written to ``/sys/kernel/mm/transparent_hugepage/{enabled,defrag}``
  and read back; ``sc_pid_max``: ``/proc/sys/kernel/pid_max``; ``disable_latency_stats``: ``0`` into
  ``/proc/sys/kernel/latencytop`` where the kernel has it (CONFIG_LATENCYTOP; Debian's has not:
  there are no latency statistics to disable, and the record says so); ``set_nic_irq_affinity``:
  the guest has no NIC (loopback only), so no NIC interrupt to place, and the record says so.

The script prints one ``key=value`` line per fact (device sizes, the mount point, each setting
read back), read back into the record stored with every run (``SetupPlan.record``).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import Any

from kbench.contract.guest_setup import (
    FILE_SYSTEMS,
    RAID_LEVELS,
    STORAGE_SHARE,
    VIRTIO_DISK_MB,
    GuestSetup,
    parse_memmap,
)

MiB = 1 << 20
MIN_DEVICE_MB = 16
"""Smaller devices are refused: mkfs.btrfs wants 114 MiB, xfs 300 MiB; 16 MiB is ext4's floor here."""
FS_MIN_MB = {"xfs": 300, "btrfs": 114, "f2fs": 64}
"""The smallest device each file system's mkfs accepts (the tools' own limits)."""
MKFS_OPTIONS = {"xfs": ["-f"], "ext2": ["-q", "-F"], "ext4": ["-q", "-F"], "btrfs": ["-f"], "f2fs": ["-f"]}
MOUNT_OPTIONS = {"xfs": "inode64"}
FS_MODULES = {"ext2": ("crc32c_generic", "ext4"), "ext4": ("crc32c_generic", "ext4"),
              "xfs": ("crc32c_generic", "xfs"), "btrfs": ("crc32c_generic", "btrfs"), "f2fs": ("crc32_generic", "f2fs")}
"""The modules each file system needs, in load order: libcrc32c (xfs, btrfs) asks the crypto API for crc32c when
it loads, a soft dependency busybox's modprobe does not follow, so crc32c_generic goes first."""
RAID_MODULES = {0: "raid0", 1: "raid1", 5: "raid456", 6: "raid456", 10: "raid10"}
PMEM_GAP_MB = 2


class SetupError(ValueError):
    """The set-up asked cannot be made in this guest (the message says why)."""


@dataclass(frozen=True)
class SetupPlan:
    """What a guest needs for a set-up: modules, host tools, kernel command line, disk, script."""

    modules: tuple[str, ...]
    tools: tuple[str, ...]
    cmdline: str
    virtio_disk_mb: int
    script: str
    record: dict[str, Any] = field(default_factory=dict)


THP = "/sys/kernel/mm/transparent_hugepage"


def plan_setup(setup: GuestSetup, memory_mb: int) -> SetupPlan:
    """The plan for ``setup`` in a guest of ``memory_mb`` (SetupError when it cannot be made)."""
    settings, record = _settings(setup)
    if not setup.has_storage:
        return SetupPlan((), (), "", 0, "set -e\n" + settings, {"asked": setup.as_dict(), **record})
    plan = _storage(setup, memory_mb)
    return SetupPlan(plan.modules, plan.tools, plan.cmdline, plan.virtio_disk_mb, plan.script + settings,
                     {**plan.record, **record})


def _settings(setup: GuestSetup) -> tuple[str, dict[str, str]]:
    """The kernel settings' script lines (each echoes what it read back) and what the record says of them."""
    lines: list[str] = []
    record: dict[str, str] = {}
    for name, path, value in (("thp_enabled", f"{THP}/enabled", setup.thp_enabled),
                              ("thp_defrag", f"{THP}/defrag", setup.thp_defrag)):
        if value is not None:
            lines.append(f"echo {value} > {path}; echo {name}=$(cat {path})")
    if setup.sc_pid_max is not None:
        pid_max = "/proc/sys/kernel/pid_max"
        lines.append(f"echo {setup.sc_pid_max} > {pid_max}; echo sc_pid_max=$(cat {pid_max})")
    if setup.disable_latency_stats:
        lines.append("if [ -e /proc/sys/kernel/latencytop ]; then echo 0 > /proc/sys/kernel/latencytop; "
                     "echo latency_stats=$(cat /proc/sys/kernel/latencytop); else echo latency_stats=absent; fi")
    if setup.set_nic_irq_affinity:
        record["set_nic_irq_affinity"] = ("nothing to place: the guest has no NIC (its only interface is loopback, "
                                          "which raises no interrupts)")
    return "".join(f"{line}\n" for line in lines), record


def _storage(setup: GuestSetup, memory_mb: int) -> SetupPlan:
    try:
        disk = setup.devices()
    except ValueError as exc:
        raise SetupError(str(exc)) from exc
    share_mb = memory_mb // STORAGE_SHARE
    record: dict[str, Any] = {"asked": setup.as_dict()}
    modules: list[str] = []
    tools: list[str] = []
    cmdline = ""
    virtio_mb = 0
    lines = ["set -e"]
    if disk.kind == "brd":
        each = min((disk.size or 0) // MiB, share_mb // disk.count)
        _check_size(each, setup, f"{disk.count} ramdisks in a quarter of the guest's {memory_mb} MiB")
        modules.append("brd")
        lines.append(f"modprobe brd rd_nr={disk.count} rd_size={each * 1024}")
        devices = [f"/dev/ram{i}" for i in range(disk.count)]
        record["made"] = f"{disk.count} brd ramdisk(s) of {each} MiB"
        if each * MiB < (disk.size or 0):
            record["cap"] = (f"asked {disk.count} × {(disk.size or 0) // MiB} MiB; ramdisks and pmem get at most 1/"
                             f"{STORAGE_SHARE} of the guest's {memory_mb} MiB")
    elif disk.kind == "pmem":
        each = share_mb // disk.count
        if setup.bp_memmap is not None:
            try:
                asked, _ = parse_memmap(setup.bp_memmap)
            except ValueError as exc:
                raise SetupError(f"bp_memmap: {exc}") from exc
            each = min(each, asked // MiB // disk.count)
        _check_size(each, setup, f"{disk.count} pmem regions in a quarter of the guest's {memory_mb} MiB")
        start = memory_mb // 2
        maps = []
        for index in range(disk.count):
            maps.append(f"memmap={each}M!{start + index * (each + PMEM_GAP_MB)}M")
        cmdline = " ".join(maps)
        modules += ["nd_e820", "nd_pmem"]
        lines.append("modprobe nd_e820; modprobe nd_pmem")
        devices = [f"/dev/pmem{i}" for i in range(disk.count)]
        lines.append(_wait_for(devices))
        record["made"] = f"{disk.count} pmem region(s) of {each} MiB ({cmdline})"
        record["cap"] = f"pmem gets at most 1/{STORAGE_SHARE} of the guest's {memory_mb} MiB, placed from its middle"
    else:
        virtio_mb = VIRTIO_DISK_MB
        devices = ["$VIRTIO"]
        lines.append("umount /mnt/scratch 2>/dev/null || true")
        lines.append("VIRTIO=$(for b in /sys/block/vd*; do [ \"$(cat $b/serial 2>/dev/null)\" = kbench-scratch ] && "
                     "echo /dev/${b##*/}; done)")
        lines.append('[ -n "$VIRTIO" ] || { echo "no virtio-blk disk" >&2; exit 1; }')
        record["made"] = (f"the guest's virtio-blk disk ({VIRTIO_DISK_MB} MiB, a sparse file on the host: qemu's "
                          "emulated disk over the host's page cache, not a physical HDD or SSD)")
        each = VIRTIO_DISK_MB
    if setup.md is not None:
        level = RAID_LEVELS.get(setup.md.upper())
        if level is None:
            raise SetupError(f"md: {setup.md!r} is not one of {', '.join(RAID_LEVELS)}")
        modules.append(RAID_MODULES[level])
        tools.append("mdadm")
        force = " --force" if len(devices) == 1 else ""
        lines.append(f"modprobe {RAID_MODULES[level]}")
        lines.append(f"mdadm --create /dev/md0 --run --quiet{force} --level={level} --raid-devices={len(devices)} "
                     f"{' '.join(devices)} >&2")
        devices = ["/dev/md0"]
        record["md"] = f"/dev/md0: mdadm RAID{level} over the {record['made']}"
    if setup.fs is not None:
        if setup.fs not in FILE_SYSTEMS:
            raise SetupError(f"fs: {setup.fs!r} is not one of {', '.join(FILE_SYSTEMS)}")
        if each < FS_MIN_MB.get(setup.fs, 0):
            raise SetupError(f"fs: {setup.fs} needs a device of at least {FS_MIN_MB[setup.fs]} MiB and this guest's "
                               f"are {each} MiB ({record['made']}); give the guest more memory or use ext4")
        mkfs = "mkfs.ext4" if setup.fs == "ext2" else f"mkfs.{setup.fs}"
        tools.append(mkfs)
        modules += FS_MODULES[setup.fs]
        options = ",".join(o for o in (MOUNT_OPTIONS.get(setup.fs), setup.mount_option) if o)
        mount_o = f"-o {shlex.quote(options)} " if options else ""
        kind = " -t ext2" if setup.fs == "ext2" else ""
        lines.append(f"for m in {' '.join(FS_MODULES[setup.fs])}; do modprobe $m 2>/dev/null || true; done")
        for dev in devices:
            mnt = f"/fs/$(basename {dev})"
            lines.append(f"{mkfs}{kind} {' '.join(MKFS_OPTIONS[setup.fs])} {dev} >/dev/null")
            lines += [f"mkdir -p {mnt}", f"mount -t {setup.fs} {mount_o}{dev} {mnt}", f"chmod 1777 {mnt}"]
            lines.append(f"echo mount={mnt}")
        record["fs"] = f"{setup.fs}: {mkfs} {' '.join(MKFS_OPTIONS[setup.fs])}" + (f", mount -o {options}" if options
                                                                                  else "")
    elif setup.mount_option is not None:
        raise SetupError("mount_option: there is no file system to mount (give fs:)")
    lines.append(f"for d in {' '.join(devices)}; do echo device=$d:$(blockdev --getsize64 $d); done")
    return SetupPlan(tuple(dict.fromkeys(modules)), tuple(tools), cmdline, virtio_mb, "\n".join(lines) + "\n",
                       record)


def _check_size(each_mb: int, setup: GuestSetup, what: str) -> None:
    if each_mb < MIN_DEVICE_MB:
        raise SetupError(f"disk: {setup.as_dict()}: {what} leaves {each_mb} MiB each, less than {MIN_DEVICE_MB} MiB")


def _wait_for(devices: list[str]) -> str:
    test = " && ".join(f"[ -b {dev} ]" for dev in devices)
    return (f"for i in $(seq 100); do {test} && break; sleep 0.1; done; {test} || "
            f"{{ echo 'no {' '.join(devices)} after modprobe nd_pmem' >&2; exit 1; }}")


def read_facts(output: str) -> dict[str, list[str]]:
    """The script's ``key=value`` lines, by key."""
    facts: dict[str, list[str]] = {}
    for line in output.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            facts.setdefault(key.strip(), []).append(value.strip())
    return facts
