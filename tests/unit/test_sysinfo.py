"""Run context parsing, on this machine and on captured files of another one."""

from __future__ import annotations

import os
import platform

import pytest

from kbench.sysinfo.collect import collect_sysinfo, count_cpus, machine_fingerprint

GUEST_FILES = {
    "/proc/cpuinfo": "processor\t: 0\nmodel name\t: QEMU Virtual CPU version 2.5+\n"
    "flags\t\t: fpu tsc hypervisor rdtscp constant_tsc\n\nprocessor\t: 1\nflags\t\t: fpu\n",
    "/sys/devices/system/cpu/online": "0-1",
    "/proc/meminfo": "MemTotal:        1004096 kB\nMemFree: 1 kB\n",
    "/proc/cmdline": "console=ttyS0 isolcpus=1 nohz_full=1 panic=-1",
    "/proc/loadavg": "0.25 0.10 0.05 1/50 99",
    "/proc/sys/kernel/hostname": "guest",
    "/proc/sys/kernel/osrelease": "6.1.0-56-amd64",
    "/proc/sys/kernel/version": "#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-2",
    "/proc/sys/kernel/randomize_va_space": "0",
    "/sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "performance",
}


@pytest.mark.parametrize(("text", "count"), [("0", 1), ("0-3", 4), ("0-3,6", 5), ("0,2-3,8-11", 7), ("", None)])
def test_count_cpus(text: str, count: int | None) -> None:
    assert count_cpus(text) == count


def test_guest_files_are_parsed() -> None:
    info = collect_sysinfo(GUEST_FILES.get, local=False)
    assert info["hostname"] == "guest"
    assert info["cpu"]["model"] == "QEMU Virtual CPU version 2.5+"
    assert info["cpu"]["count"] == 2
    assert info["cpu"]["tsc_flags"] == {"tsc": True, "rdtscp": True, "constant_tsc": True,
                                        "nonstop_tsc": False, "tsc_known_freq": False}
    assert info["memory_bytes"] == 1004096 * 1024
    assert info["kernel"]["release"] == "6.1.0-56-amd64"
    assert info["virtualization"] == {"vm": "unknown-hypervisor", "container": None,
                                      "hypervisor_flag": True, "virtualized": True}
    noise = info["noise"]
    assert noise["governor"] == {"cpu1": "performance"}
    assert noise["aslr"] == "0" and noise["isolcpus"] == "1" and noise["nohz_full"] == "1"
    assert noise["turbo"] is None and noise["smt"] is None
    assert noise["loadavg_1m"] == 0.25


def test_this_machine_agrees_with_python() -> None:
    info = collect_sysinfo()
    assert info["kernel"]["release"] == platform.release()
    assert info["cpu"]["count"] == os.cpu_count()
    assert info["memory_bytes"] == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert machine_fingerprint(info) == machine_fingerprint(collect_sysinfo())
