"""LKP's set-up keys in a job file: storage (``disk``, ``fs``, ``md``/``raid_level``, ``mount_option``,
``nr_pmem``, ``bp_memmap``/``bp1_memmap``) and the kernel settings of the 0-Day report's parameter
table (``transparent_hugepage``/``thp_enabled``, ``thp_defrag``, ``disable_latency_stats``,
``set_nic_irq_affinity``, ``sc_pid_max``): their converters, and the checks that need the whole
instance (its target).

They are matrix axes like any setting and enter the instance's id (``JobInstance.guest_setup``).
They are made in a guest, before the instance runs (``kbench.targets.vm.guest_setup``, stored
with every run); kbench changes none of this machine's disks or kernel settings, so an instance
on the ``local`` target is refused, and so is one whose set-up the guest cannot make (too small a
ramdisk for the file system asked, ...), before anything boots.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kbench.contract.guest_setup import (
    FILE_SYSTEMS,
    RAID_LEVELS,
    SETUP_GUEST_MB,
    THP_DEFRAG,
    THP_ENABLED,
    GuestSetup,
    parse_disk,
    parse_memmap,
)
from kbench.jobs import values
from kbench.jobs.problems import ProblemCollector
from kbench.jobs.yaml_tree import Scalar


def _disk(value: Scalar) -> str:
    parse_disk(value.text)
    return value.text.strip()


def _memmap(value: Scalar) -> str:
    parse_memmap(value.text)
    return value.text.strip()


def _text(value: Scalar) -> str:
    if not value.text.strip():
        raise ValueError("must not be empty")
    return value.text.strip()


def _raid(value: Scalar) -> str:
    text = value.text.strip().upper()
    if text not in RAID_LEVELS:
        raise ValueError(f"{value.shown} is not one of {', '.join(RAID_LEVELS)} (btrfs's own RAID, braid*, is not "
                         "made by kbench)")
    return text


def _flag(value: Scalar) -> bool:
    if value.text.strip() in ("1", "true", "yes"):
        return True
    if value.text.strip() in ("0", "false", "no"):
        return False
    raise ValueError(f"must be 1 or 0, got {value.shown}")


SETUP_KEYS: dict[str, tuple[str, Callable[[Scalar], Any]]] = {
    "disk": ("disk", _disk),
    "fs": ("fs", values.choice(FILE_SYSTEMS)),
    "md": ("md", _raid),
    "raid_level": ("md", _raid),  # LKP's other spelling: raid_level: raid0
    "mount_option": ("mount_option", _text),
    "nr_pmem": ("nr_pmem", values.positive_int),
    "bp_memmap": ("bp_memmap", _memmap),
    "bp1_memmap": ("bp_memmap", _memmap),  # the report's boot_params: bp1_memmap
    "transparent_hugepage": ("thp_enabled", values.choice(THP_ENABLED)),
    "thp_enabled": ("thp_enabled", values.choice(THP_ENABLED)),
    "thp_defrag": ("thp_defrag", values.choice(THP_DEFRAG)),
    "disable_latency_stats": ("disable_latency_stats", _flag),
    "set_nic_irq_affinity": ("set_nic_irq_affinity", _flag),
    "sc_pid_max": ("sc_pid_max", values.positive_int),
}
"""The set-up keys, by name: the field each sets (aliases share one) and its converter."""
FIELDS = tuple(dict.fromkeys(field for field, _ in SETUP_KEYS.values()))


def setup_of(settings: dict[str, Any]) -> dict[str, str]:
    """The set-up fields of one point of the matrix, as text (empty: none asked)."""
    asked = {name: settings[name] for name in FIELDS if name in settings}
    return GuestSetup(**asked).as_dict() if asked else {}


def check_setup(spec: Any, instances: list[Any], problems: ProblemCollector) -> None:
    """Each instance's set-up must be one a guest can make: on a guest target, with a device for a file
    system, and within the guest's memory (the plan's own checks). ``spec`` is the job's ``JobSpec``."""
    from kbench.targets.vm.guest_setup import SetupError, plan_setup

    first = next((a for a in spec.axes if a.field in FIELDS), None)
    if first is None:
        return
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for instance in instances:
        key = (instance.target, tuple(sorted(instance.guest_setup.items())))
        if not instance.guest_setup or key in seen:
            continue
        seen.add(key)
        setup = GuestSetup.from_dict(instance.guest_setup)
        where = spec.axis("disk") or spec.axis("nr_pmem") or first
        if instance.target == "local":
            problems.add(first.line, first.label, "LKP's set-up is made in a guest kernel (give kernel: deb:RELEASE): "
                                                  "kbench changes none of this machine's disks or kernel settings")
            continue
        if setup.has_storage and setup.disk is None and setup.nr_pmem is None:
            problems.add(first.line, first.label, "needs a disk to set up: disk: (1HDD, NBRD_SIZE, Npmem) or nr_pmem:")
            continue
        if setup.bp_memmap is not None and setup.devices().kind != "pmem":
            memmap = spec.axis("bp_memmap") or first
            problems.add(memmap.line, memmap.label, "reserves pmem: give nr_pmem: or disk: Npmem with it")
            continue
        try:
            plan_setup(setup, SETUP_GUEST_MB)
        except SetupError as exc:
            problems.add(where.line, where.label, str(exc))
