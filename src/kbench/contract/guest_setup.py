"""LKP's set-up of the machine under test as a job asks for it, read into one value the job and the
target share (``GuestSetup``): storage (``disk``, ``fs``, ``md``, ``mount_option``, ``nr_pmem``,
``bp_memmap``) and the kernel settings of the 0-Day report's parameter table (``thp_enabled``,
``thp_defrag``, ``disable_latency_stats``, ``set_nic_irq_affinity``, ``sc_pid_max``).

``disk`` is LKP's device list: ``1HDD``/``1SSD`` (the guest's virtio-blk disk, a sparse file
on the host), ``NBRD_SIZE`` (N brd ramdisks of SIZE each, e.g. ``4BRD_12G``) or ``Npmem``
(N pmem regions, memory the kernel is told at boot to treat as persistent: ``memmap=``).
The target sizes what it makes to the guest's memory (``STORAGE_SHARE``) and stores what it
made and why with every run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FILE_SYSTEMS = ("ext2", "ext4", "xfs", "btrfs", "f2fs")
"""``fs:`` values kbench makes (mkfs in the guest, from the host's e2fsprogs, xfsprogs, btrfs-progs, f2fs-tools)."""
RAID_LEVELS = {"RAID0": 0, "RAID1": 1, "RAID5": 5, "RAID6": 6, "RAID10": 10}
"""``md:`` values (LKP's ``md: RAID0``) and the mdadm level each is."""
STORAGE_SHARE = 4
"""Ramdisks and pmem together take at most 1/STORAGE_SHARE of the guest's memory: the stated cap."""
SETUP_GUEST_MB = 2048
"""The memory of a guest that makes a storage set-up (a plain guest has 1024 MiB): 512 MiB for ramdisks."""
THP_ENABLED = ("always", "madvise", "never")
THP_DEFRAG = ("always", "defer", "defer+madvise", "madvise", "never")
VIRTIO_DISK_MB = 2048
"""The guest's virtio-blk disk (``1HDD``/``1SSD``): a sparse host file of this size."""

_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_DISK = re.compile(r"(?P<count>[1-9][0-9]*)(?:(?P<kind>HDD|SSD)|BRD_(?P<size>[0-9]+[KMGT]?)|(?P<pmem>pmem))")


def size_of(text: str) -> int:
    """Bytes of ``12G``, ``512M``, ``4096`` (powers of 1024, as LKP's sizes)."""
    match = re.fullmatch(r"([0-9]+)([kKmMgGtT]?)(?:i?[bB])?", text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a size such as 512M or 12G")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]


@dataclass(frozen=True)
class Disk:
    """``disk:`` read: ``count`` devices of ``kind`` (``virtio``, ``brd`` or ``pmem``); ``size`` is
    what the job asked for each brd (bytes; None for the others)."""

    count: int
    kind: str
    size: int | None = None


def parse_disk(text: str) -> Disk:
    """``1HDD`` / ``1SSD`` / ``4BRD_12G`` / ``2pmem`` (ValueError saying what is accepted)."""
    match = _DISK.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"must be LKP's 1HDD, 1SSD, NBRD_SIZE (4BRD_12G) or Npmem (2pmem), got {text!r}")
    count = int(match.group("count"))
    if match.group("kind"):
        if count != 1:
            raise ValueError(f"{text}: the guest has one virtio-blk disk; ask for 1{match.group('kind')} or for "
                             "ramdisks (NBRD_SIZE)")
        return Disk(1, "virtio")
    if match.group("pmem"):
        return Disk(count, "pmem")
    size = size_of(match.group("size"))
    if size <= 0:
        raise ValueError(f"{text}: a ramdisk of no size")
    return Disk(count, "brd", size)


def parse_memmap(text: str) -> tuple[int, int]:
    """LKP's ``bp_memmap: 96G!18G`` (SIZE!START, the kernel's memmap=): (size, start) in bytes."""
    match = re.fullmatch(r"([0-9]+[KMGT]?)!([0-9]+[KMGT]?)", text.strip())
    if match is None:
        raise ValueError(f"must be the kernel's memmap=SIZE!START, e.g. 96G!18G, got {text!r}")
    return size_of(match.group(1)), size_of(match.group(2))


@dataclass(frozen=True)
class GuestSetup:
    """What a job asks LKP to set up before its benchmark runs (each field as written, None: not asked)."""

    disk: str | None = None
    fs: str | None = None
    md: str | None = None
    mount_option: str | None = None
    nr_pmem: int | None = None
    bp_memmap: str | None = None
    thp_enabled: str | None = None
    thp_defrag: str | None = None
    disable_latency_stats: bool | None = None
    set_nic_irq_affinity: bool | None = None
    sc_pid_max: int | None = None

    def as_dict(self) -> dict[str, str]:
        """The fields asked, as text (part of a job instance's identity)."""
        return {name: _text(value) for name, value in vars(self).items() if value is not None}

    @classmethod
    def from_dict(cls, data: dict[str, str]) -> GuestSetup:
        def number(name: str) -> int | None:
            return int(data[name]) if name in data else None

        def flag(name: str) -> bool | None:
            return data[name] in ("1", "true") if name in data else None

        return cls(disk=data.get("disk"), fs=data.get("fs"), md=data.get("md"), mount_option=data.get("mount_option"),
                   nr_pmem=number("nr_pmem"), bp_memmap=data.get("bp_memmap"), thp_enabled=data.get("thp_enabled"),
                   thp_defrag=data.get("thp_defrag"), disable_latency_stats=flag("disable_latency_stats"),
                   set_nic_irq_affinity=flag("set_nic_irq_affinity"), sc_pid_max=number("sc_pid_max"))

    @property
    def has_storage(self) -> bool:
        return any(v is not None for v in (self.disk, self.fs, self.md, self.mount_option, self.nr_pmem,
                                           self.bp_memmap))

    def devices(self) -> Disk:
        """The block devices asked: ``disk``, or ``nr_pmem`` pmem regions (LKP's ``disk:nr_pmem``)."""
        if self.disk is not None:
            return parse_disk(self.disk)
        if self.nr_pmem is not None:
            return Disk(self.nr_pmem, "pmem")
        raise ValueError("no disk asked (disk: or nr_pmem:)")


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)
