"""LKP job-file keys kbench recognises: the two it does (perf-stat, perf-profile) and those it
does not apply, each with a warning, not an error.

LKP (the 0-Day test robot's lkp-tests) writes job files with keys for its own monitors,
disk set-up, machine scheduling and kernel tuning. A job file copied from LKP should
still run: those keys are named here with the reason kbench leaves them out, so
``expand_job`` reports ``ignored: not supported (...)`` and runs the benchmark. A key that
is in none of these tables stays an unknown key (an error with did-you-mean).

``perf-stat:`` and ``perf-profile:`` turn on the job settings ``counters`` and ``profile``
(``PERF_MONITORS``); an option written under them is named in a warning.

The keys LKP shares with kbench are read as settings (``jobs.schema``): ``nr_task``,
``nr_threads`` (the same: a number of tasks, or a percentage of the CPUs), ``runtime``,
``testtime`` (the same: seconds), ``iterations`` (``3`` or LKP's ``3x``), ``cpufreq_governor``.
"""

from __future__ import annotations

PERF_MONITORS = {"perf-stat": "counters", "perf-profile": "profile"}
"""LKP's perf monitors kbench does: ``perf-stat`` counts events around each run (the job setting
``counters``), ``perf-profile`` records a profile beside it (``profile``)."""

MONITOR_LISTS = frozenset({"default-monitors", "monitors"})
"""Keys holding a mapping of monitors: the perf ones in them are done, the rest ignored."""

MONITORS = frozenset({
    "perf-sched", "perf-c2c", "perf-node", "proc-vmstat", "proc-stat", "vmstat",
    "mpstat", "iostat", "sched_debug", "meminfo", "slabinfo", "interrupts", "softirqs", "numa-vmstat",
    "numa-meminfo", "numa-numastat", "turbostat", "cpuidle", "cpufreq-stats", "diskstats", "lock_stat",
    "latency_stats", "heartbeat", "uptime", "kmsg", "pmeter", "ftrace", "buddyinfo", "pagetypeinfo",
    "zoneinfo", "energy", "oom-killer", "nfsstat", "ethtool", "netstat", "sar", "top", "watchdog",
    "default-monitors", "default-watchdogs", "monitors", "watchdogs",
})
"""LKP's monitors: samplers running beside the benchmark (kbench records sysinfo instead)."""

DISK_SETUP = frozenset({
    "disk", "fs", "fs1", "fs2", "raid_level", "md", "nr_ssd", "nr_hdd", "hdd_partitions", "ssd_partitions",
    "rootfs_partition", "swap_partitions", "pmem_partitions", "iosched", "mount_option", "fs_setup", "nfs",
    "cifs", "lvm", "swap", "bp_memmap", "bp1_memmap", "need_partitions",
})
"""LKP's disk, file system and block device set-up."""

ENVIRONMENT = frozenset({
    "testbox", "tbox_group", "queue", "kconfig", "compiler", "commit", "branch", "rootfs", "arch", "ucode",
    "need_memory", "need_cpu", "nr_cpu", "memory", "node_roles", "boot_params", "kernel_cmdline",
    "job_origin", "enqueue_time", "id", "result_root", "LKP_SERVER", "lkp_initrd_user", "kernel_cmdline_hw",
    "submit_id", "upload_to", "sleep", "user", "os", "os_arch", "os_version", "cluster", "need_kconfig",
    "schedule_notify_address", "timeout", "kmemleak",
})
"""LKP's scheduling and machine-selection keys: which box, kernel build and root file system."""

_THP = "kbench does not change transparent huge pages: the runs use the setting in force"
TUNING = {
    "transparent_hugepage": _THP,
    "thp_enabled": _THP,
    "thp_defrag": _THP,
    "disable_latency_stats": "latency statistics are off unless /proc/sys/kernel/latencytop is 1, and kbench "
                             "never turns them on",
    "boot-time": "kbench does not record boot time",
    "perf_event_paranoid": "kbench does not change perf_event_paranoid",
    "set_nic_irq_affinity": "kbench does not move NIC interrupts: they stay where the system put them",
    "test_size": "kbench does not size a disk or memory for the run: the benchmark's own parameters do, "
                 "e.g. fio's size per job",
    "class": "LKP's class of stress-ng stressors; kbench runs the stressors test: names",
}
"""Kernel tuning and set-up LKP applies before the run and kbench does not (each with why)."""

SECTION_KEYS = frozenset({"class", "test_size"})
"""Keys LKP also writes inside a benchmark's section (``stress-ng: {class: os, ...}``,
``fio-setup-basic: {test_size: 512g, ...}``): there they are LKP's, not the benchmark's parameters."""


KNOWN = MONITORS | DISK_SETUP | ENVIRONMENT | frozenset(TUNING) | frozenset(PERF_MONITORS)
"""Every LKP key recognised and not applied (for did-you-mean of unknown keys)."""


def perf_option_ignored(key: str) -> str:
    """The warning for an option of LKP's ``perf-stat:`` / ``perf-profile:`` monitor (its events,
    interval, delay, frequency): kbench counts and profiles its own way."""
    if key == "perf-profile":
        return ("ignored: kbench profiles each run in a run of its own with its own settings (call graphs at "
                "4999 Hz, cycles or cpu-clock); the monitor itself is on")
    return ("ignored: kbench counts its own set of events around the measured region (task-clock, switches, "
            "migrations, faults, cycles, instructions, branches, caches); the monitor itself is on")


def ignored(key: str) -> str | None:
    """The warning for a recognised LKP key kbench does not apply, or None."""
    if key in TUNING:
        return f"ignored: not supported ({TUNING[key]})"
    if key in MONITORS:
        return "ignored: not supported (an LKP monitor; kbench stores the machine inventory and noise " \
               "state with every run instead)"
    if key in DISK_SETUP:
        return "ignored: not supported (LKP disk set-up; benchmarks run on the existing file systems)"
    if key in ENVIRONMENT:
        return "ignored: not supported (an LKP scheduling key; kbench runs on this machine or its target)"
    return None
