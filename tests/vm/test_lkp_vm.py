"""LKP as it is, in a Debian guest: the set-up of disks and kernel settings (brd, md, mkfs, pmem through
memmap=, THP), checked against what the guest kernel says (/proc/mdstat, /proc/mounts, /proc/cmdline, the
block devices' sizes), fsmark and pigz on it, and the 0-Day report's own fio and netperf jobs run through
``kbench run``.

Each set-up boots a guest of its own (2 GiB: ramdisks and pmem get a quarter); runs are seconds long.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kbench.catalog.benchmarks import lookup
from kbench.contract.guest_setup import GuestSetup
from kbench.contract.request import RunRequest
from kbench.kinds import registry
from kbench.targets.vm_target import VmTarget
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = pytest.mark.vm

LKP_JOBS = Path(__file__).resolve().parents[1] / "data" / "lkp-jobs"


def guest(target: VmTarget, command: str) -> str:
    assert target.session is not None
    done = target.session.exec(["sh", "-c", command], timeout=60)
    assert done.ok, done.stderr
    return done.text


def test_ramdisks_md_and_btrfs_then_pmem_ext4_and_thp(tmp_path: Path) -> None:
    target = VmTarget(TEST_KERNEL, console_log=tmp_path / "console.log", with_module=False,
                      suite_tools=("fs_mark", "pigz"))
    try:
        made = target.set_up_guest(GuestSetup(disk="2BRD_200M", md="RAID0", fs="btrfs"))
        assert made["made"] == "2 brd ramdisk(s) of 200 MiB" and made["benchmark_dir"] == "/fs/md0"
        sectors = guest(target, "cat /sys/block/ram0/size /sys/block/ram1/size").split()  # the kernel's count
        assert [int(n) * 512 for n in sectors] == [200 << 20] * 2
        mdstat = guest(target, "cat /proc/mdstat")
        assert "md0 : active raid0" in mdstat and "ram0[0]" in mdstat and "ram1[1]" in mdstat
        assert "/dev/md0 /fs/md0 btrfs" in guest(target, "cat /proc/mounts")
        assert int(guest(target, "grep MemTotal /proc/meminfo").split()[1]) > 1800 * 1024  # booted with 2 GiB
        bench = lookup("fsmark.NoSync")
        request = RunRequest(benchmark=bench.name, params={"test_size": "1M", "threads": "2"}, iterations=1)
        measurement = registry.measure(target, bench, request)
        (iteration,) = json.loads(measurement.stderr)
        assert iteration["values"]["fsmark.NoSync.files_per_sec"] > 0
        assert target.sysinfo()["guest_setup"]["mounts"] == ["/fs/md0"]  # stored with every run
        # pigz in the guest: its input made by busybox's head and base64 on the btrfs, timed by the agent
        bench = lookup("pigz.gzip")
        request = RunRequest(benchmark=bench.name, params={"size": "1M", "threads": "2"}, iterations=1)
        measurement = registry.measure(target, bench, request)
        (iteration,) = json.loads(measurement.stderr)
        raw = (1 << 20) * 3 // 4
        encoded = 4 * -(-raw // 3)
        assert int(iteration["stdout"].split()[0]) == encoded + -(-encoded // 76)
        assert iteration["values"]["pigz.gzip.throughput"] > 0 and measurement.header["where"] == "guest"

        made = target.set_up_guest(GuestSetup(nr_pmem=1, bp_memmap="96G!18G", fs="ext4", thp_enabled="never",
                                              disable_latency_stats=True))
        assert made["cmdline"] == "memmap=512M!1024M" and "memmap=512M!1024M" in guest(target, "cat /proc/cmdline")
        assert int(guest(target, "cat /sys/block/pmem0/size")) * 512 == 512 << 20
        assert "/dev/pmem0 /fs/pmem0 ext4" in guest(target, "cat /proc/mounts")
        assert "[never]" in guest(target, "cat /sys/kernel/mm/transparent_hugepage/enabled")
        assert made["thp_enabled"] == "always madvise [never]"
        assert made["latency_stats"] == "absent"  # Debian's kernel has no CONFIG_LATENCYTOP
        assert not kernel_log_problems(guest(target, "dmesg"))
    finally:
        target.close()


def run_job(tmp_path: Path, name: str, replace: dict[str, str]) -> dict:
    text = (LKP_JOBS / name).read_text()
    for old, new in replace.items():
        text = text.replace(old, new)
    job = tmp_path / name
    job.write_text(text)
    env = dict(os.environ, KBENCH_DB=str(tmp_path / "k.db"))
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", "run", str(job), "--json"], capture_output=True,
                          text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads(proc.stdout)
    run_id = entry["runs"][-1]
    shown: dict = json.loads(subprocess.run([sys.executable, "-m", "kbench.cli", "show", str(run_id), "--json"],
                                            capture_output=True, text=True, env=env, check=True).stdout)
    return shown


def metric(shown: dict, name: str) -> dict:
    if "metrics" not in shown:  # a run of one metric
        assert shown["metric"] == name
        return shown
    found: dict = next(m for m in shown["metrics"] if m["metric"] == name)
    return found


def test_the_reports_fio_job_runs_in_the_guest(tmp_path: Path) -> None:
    """The report's fio job in LKP's layout (fio-basic, fio-setup-basic, disk: 1SSD, fs: btrfs, test_size: 128G),
    with its 300 s made 2 s: O_DIRECT writes of 4 KiB on a btrfs the guest made, test_size capped to the disk."""
    shown = run_job(tmp_path, "report-fio.yaml", {"runtime: 300s": "runtime: 2s"})
    assert shown["status"] == "complete" and shown["benchmark"] == "fio.write"
    assert shown["params"]["direct"] == "1" and shown["params"]["test_size"] == "1638M"
    setup = shown["sysinfo"]["guest_setup"]
    assert setup["fs"] == "btrfs: mkfs.btrfs -f" and setup["benchmark_dir"] == "/fs/vda"
    assert any("test_size 128G capped to 1638M" in w for w in shown["warnings"])
    assert metric(shown, "fio.write.bw")["median"] > 0


def test_the_reports_netperf_job_runs_in_the_guest(tmp_path: Path) -> None:
    """The report's netperf job (ip: ipv4, cluster: cs-localhost, send_size: 10K, nr_threads: 25%) with its
    TCP_SENDFILE test (SCTP is refused: Debian's netperf has none), 300 s made 1 s, and vmstat monitored."""
    shown = run_job(tmp_path, "report-netperf.yaml", {"runtime: 300s": "runtime: 1s",
                                                       "[SCTP_STREAM_MANY, TCP_SENDFILE]": "TCP_SENDFILE",
                                                       "cpufreq_governor": "monitors:\n  vmstat: 1\ncpufreq_governor"})
    assert shown["status"] == "complete" and shown["benchmark"] == "netperf.TCP_SENDFILE"
    assert (shown["params"]["send_size"], shown["params"]["ip"], shown["params"]["instances"]) == ("10K", "ipv4", "1")
    assert metric(shown, "netperf.TCP_SENDFILE.throughput")["median"] > 0
    # monitors: {vmstat: 1} sampled in the guest, stored beside the benchmark's metric, as series of their own
    cs = metric(shown, "vmstat.system.cs")
    assert cs["unit"] == "/s" and cs["n"] == 1 and cs["median"] > 0
    assert metric(shown, "vmstat.cpu.sy")["median"] > 0
