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
LKP's set-up keys (``disk``, ``fs``, ``md``, ``nr_pmem``, ``bp_memmap``, THP, latency statistics,
NIC interrupts, ``sc_pid_max``) are settings made in a guest (``jobs.lkp_setup``). The keys below
that kbench cannot apply are refused with the reason (``REFUSED``), never run without.
"""

from __future__ import annotations

PERF_MONITORS = {"perf-stat": "counters", "perf-profile": "profile"}
"""LKP's perf monitors kbench does: ``perf-stat`` counts events around each run (the job setting
``counters``), ``perf-profile`` records a profile beside it (``profile``)."""

MONITOR_LISTS = frozenset({"default-monitors", "monitors"})
"""Keys holding a mapping of monitors: the perf ones in them are done, the rest ignored."""

SAMPLED_MONITORS = ("vmstat", "mpstat", "proc-vmstat", "interrupts")
"""LKP's monitors kbench samples during a whole tool's iterations (``kbench.profile.monitors``): each run
stores their figures as metrics of their own, beside the benchmark's."""
DEFAULT_MONITOR_INTERVAL_S = 1.0
MAX_MONITOR_INTERVAL_S = 3600.0

MONITORS = frozenset({
    "perf-sched", "perf-c2c", "perf-node", "proc-vmstat", "proc-stat", "vmstat",
    "mpstat", "iostat", "sched_debug", "meminfo", "slabinfo", "interrupts", "softirqs", "numa-vmstat",
    "numa-meminfo", "numa-numastat", "turbostat", "cpuidle", "cpufreq-stats", "diskstats", "lock_stat",
    "latency_stats", "heartbeat", "uptime", "kmsg", "pmeter", "ftrace", "buddyinfo", "pagetypeinfo",
    "zoneinfo", "energy", "oom-killer", "nfsstat", "ethtool", "netstat", "sar", "top", "watchdog",
    "default-monitors", "default-watchdogs", "monitors", "watchdogs",
})
"""LKP's monitors: samplers running beside the benchmark; those not in SAMPLED_MONITORS are not taken (kbench
records sysinfo instead)."""

_NFS = ("a network file system over the guest's loopback needs its server (nfsd and rpcbind, or smbd) in the "
        "guest, which kbench does not set up; the benchmark would run on the local file system instead")
_PARTITIONS = ("LKP picks a test box by its partitions; the guest has the devices disk: asks for (1HDD, "
               "NBRD_SIZE, Npmem)")
REFUSED = {
    "fs1": _NFS, "fs2": _NFS, "nfs": _NFS, "cifs": _NFS,
    "swap": "kbench makes no swap device in the guest (its memory is all it has); the run would not swap",
    "swap_partitions": "kbench makes no swap device in the guest (its memory is all it has); the run would not swap",
    "iosched": "kbench does not change the I/O scheduler (ramdisks and pmem have none)",
    "lvm": "kbench does not make LVM volumes; md: makes an md array",
    "fs_setup": "kbench makes the file system fs: names, with LKP's mkfs options; there is no other set-up",
    "nr_ssd": _PARTITIONS, "nr_hdd": _PARTITIONS, "hdd_partitions": _PARTITIONS, "ssd_partitions": _PARTITIONS,
    "rootfs_partition": _PARTITIONS, "pmem_partitions": _PARTITIONS, "need_partitions": _PARTITIONS,
}
"""LKP keys kbench cannot apply on its targets, each refused (an error of the job) with why."""
DISK_SETUP = frozenset(REFUSED)

ENVIRONMENT = frozenset({
    "testbox", "tbox_group", "queue", "kconfig", "compiler", "commit", "branch", "rootfs", "arch", "ucode",
    "need_memory", "need_cpu", "nr_cpu", "memory", "node_roles", "boot_params", "kernel_cmdline",
    "job_origin", "enqueue_time", "id", "result_root", "LKP_SERVER", "lkp_initrd_user", "kernel_cmdline_hw",
    "submit_id", "upload_to", "sleep", "user", "os", "os_arch", "os_version", "need_kconfig",
    "schedule_notify_address", "timeout", "kmemleak",
})
"""LKP's scheduling and machine-selection keys: which box, kernel build and root file system."""

TUNING = {
    "boot-time": "kbench does not record boot time",
    "perf_event_paranoid": "kbench does not change perf_event_paranoid",
    "class": "LKP's class of stress-ng stressors; kbench runs the stressors test: names",
}
"""Settings LKP applies before the run that change nothing kbench measures (each with why): warnings."""

SECTION_KEYS = frozenset({"class"})
"""Keys LKP also writes inside a benchmark's section (``stress-ng: {class: os, ...}``): there they are
LKP's, not the benchmark's parameters."""

TOP_PARAMS = frozenset({"ip", "test_size"})
"""LKP keys written at top level that are the benchmark's parameters (netperf's ``ip``; ``test_size``,
which fsmark and fio take): a benchmark without the parameter refuses them, naming what it takes."""

CLUSTER = "cs-localhost"
"""The one ``cluster:`` kbench runs: client and server on one machine (netperf and netserver on the target)."""

SUITES = {"fio-basic": ("fio", "fio-setup-basic")}
"""LKP's names of a suite that kbench names otherwise: its kbench suite and LKP's section of parameters."""

NESTED = {
    "transparent_hugepage": frozenset({"thp_enabled", "thp_defrag"}),
    "boot_params": frozenset({"bp_memmap", "bp1_memmap"}),
    "disk": frozenset({"nr_pmem"}),
}
"""LKP's set-up keys that group others (the report's ``boot_params:bp1_memmap``, ``disk:nr_pmem``)."""


KNOWN = (MONITORS | DISK_SETUP | ENVIRONMENT | frozenset(TUNING) | frozenset(PERF_MONITORS) | TOP_PARAMS
         | frozenset({"cluster"}))
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
    if key in ENVIRONMENT:
        return "ignored: not supported (an LKP scheduling key; kbench runs on this machine or its target)"
    return None
