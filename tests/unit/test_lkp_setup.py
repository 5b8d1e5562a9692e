"""LKP's set-up keys (disk, fs, md, nr_pmem, bp_memmap, THP, latency statistics, NIC interrupts) in job
files, and the guest plans they become (kbench.targets.vm.guest_setup). The plans' scripts run in a real
guest in tests/vm/test_lkp_vm.py; here: what is asked, what is refused and why, and the sizes and caps."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.contract.guest_setup import GuestSetup, parse_disk, parse_memmap
from kbench.contract.request import RunRequest
from kbench.engine.guest_setup import capped_test_size
from kbench.jobs import JobError, expand_job
from kbench.targets.vm.guest_setup import SetupError, plan_setup

KERNEL = "kernel: deb:6.1.0-56-amd64\n"


def job(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(JobError) as caught:
        expand_job(path, cpu_count=2)
    return [f"{p.line}: {p.key}: {p.message}" for p in caught.value.problems]


def test_disk_values_are_lkps() -> None:
    assert parse_disk("4BRD_12G") == parse_disk("4BRD_12G") and parse_disk("4BRD_12G").size == 12 << 30
    assert (parse_disk("1SSD").kind, parse_disk("2pmem").count) == ("virtio", 2)
    assert parse_memmap("96G!18G") == (96 << 30, 18 << 30)
    for bad in ("2HDD", "BRD_1G", "1BRD", "1floppy"):
        with pytest.raises(ValueError):
            parse_disk(bad)


def test_ramdisks_are_capped_at_a_quarter_of_the_guest_and_say_so() -> None:
    plan = plan_setup(GuestSetup(disk="4BRD_12G", md="RAID0", fs="btrfs"), 2048)
    assert "modprobe brd rd_nr=4 rd_size=131072" in plan.script  # 512 MiB / 4, in KiB
    assert "mdadm --create /dev/md0 --run --quiet --level=0 --raid-devices=4 /dev/ram0 /dev/ram1 /dev/ram2 " \
           "/dev/ram3" in plan.script
    assert "mkfs.btrfs -f /dev/md0" in plan.script and "mount -t btrfs /dev/md0 /fs/$(basename /dev/md0)" in \
        plan.script
    assert set(plan.modules) >= {"brd", "raid0", "btrfs"} and plan.tools == ("mdadm", "mkfs.btrfs")
    assert plan.record["made"] == "4 brd ramdisk(s) of 128 MiB"
    assert plan.record["cap"].startswith("asked 4 × 12288 MiB")
    small = plan_setup(GuestSetup(disk="1BRD_64M", fs="ext4"), 2048)
    assert "rd_size=65536" in small.script and "cap" not in small.record  # what was asked, when it fits


def test_pmem_is_reserved_with_memmap_inside_the_guest() -> None:
    plan = plan_setup(GuestSetup(nr_pmem=2, bp_memmap="96G!18G", fs="xfs"), 4096)
    assert plan.cmdline == "memmap=512M!2048M memmap=512M!2562M"  # a gap, or the kernel merges them
    assert "modprobe nd_e820; modprobe nd_pmem" in plan.script
    assert "-o inode64" in plan.script  # LKP's xfs mount option
    with pytest.raises(SetupError, match="xfs needs a device of at least 300 MiB"):
        plan_setup(GuestSetup(disk="4pmem", fs="xfs"), 2048)


def test_kernel_settings_only_need_no_disk() -> None:
    plan = plan_setup(GuestSetup(thp_enabled="never", thp_defrag="defer", sc_pid_max=65536,
                                 disable_latency_stats=True, set_nic_irq_affinity=True), 1024)
    assert (plan.modules, plan.tools, plan.cmdline) == ((), (), "")
    assert "echo never > /sys/kernel/mm/transparent_hugepage/enabled" in plan.script
    assert "echo 65536 > /proc/sys/kernel/pid_max" in plan.script
    assert "no NIC" in plan.record["set_nic_irq_affinity"]


def test_the_report_fio_job_in_lkps_layout(tmp_path: Path) -> None:
    path = Path(__file__).resolve().parents[1] / "data" / "lkp-jobs" / "report-fio.yaml"
    (instance,) = expand_job(path, cpu_count=2)
    assert instance.benchmark == "fio.write"  # fio-basic's rw names the test
    assert instance.run_params() == {"bs": "4k", "ioengine": "sync", "direct": "1", "test_size": "128G",
                                     "numjobs": "2", "runtime": "300"}
    assert instance.guest_setup == {"disk": "1SSD", "fs": "btrfs"}


def test_set_up_keys_are_refused_on_this_machine_and_nested_keys_read(tmp_path: Path) -> None:
    assert problems(job(tmp_path, "benchmark: fsmark.NoSync\ndisk: 1BRD_1G\nfs: ext4\n")) == [
        "2: disk: LKP's set-up is made in a guest kernel (give kernel: deb:RELEASE): kbench changes none of this "
        "machine's disks or kernel settings"]
    assert problems(job(tmp_path, "benchmark: fsmark.NoSync\n" + KERNEL + "fs: ext4\n")) == [
        "3: fs: needs a disk to set up: disk: (1HDD, NBRD_SIZE, Npmem) or nr_pmem:"]
    assert problems(job(tmp_path, "benchmark: fsmark.NoSync\n" + KERNEL + "disk: 1HDD\nbp_memmap: 1G!1G\n")) == [
        "4: bp_memmap: reserves pmem: give nr_pmem: or disk: Npmem with it"]
    assert problems(job(tmp_path, "benchmark: fsmark.NoSync\n" + KERNEL + "transparent_hugepage:\n  thp_enabled: "
                                  "never\n  khugepaged: 1\n")) == [
        "5: transparent_hugepage.khugepaged: cannot be applied: kbench sets thp_defrag, thp_enabled under "
        "transparent_hugepage:"]
    nested = job(tmp_path, "benchmark: fsmark.NoSync\n" + KERNEL + "boot_params:\n  bp1_memmap: 96G!18G\n"
                           "disk:\n  nr_pmem: 1\nfs: ext4\n")
    (instance,) = expand_job(nested, cpu_count=2)
    assert instance.guest_setup == {"fs": "ext4", "nr_pmem": "1", "bp_memmap": "96G!18G"}
    plain = job(tmp_path, "benchmark: fsmark.NoSync\n" + KERNEL)
    assert expand_job(plain, cpu_count=2)[0].id != instance.id  # the set-up is part of what is measured


def test_lkp_top_level_parameters_and_cluster(tmp_path: Path) -> None:
    netperf = job(tmp_path, "suite: netperf\n" + KERNEL + "ip: ipv6\ncluster: cs-localhost\nnr_threads: 100%\n"
                            "netperf:\n  test: TCP_SENDFILE\n  send_size: 10K\n")
    (instance,) = expand_job(netperf, cpu_count=2)
    assert instance.run_params()["ip"] == "ipv6" and instance.run_params()["instances"] == "2"
    assert problems(job(tmp_path, "benchmark: syscall.getppid\nip: ipv4\n")) == [
        "2: ip: syscall.getppid has no parameter 'ip'; its parameters: spin"]
    assert problems(job(tmp_path, "suite: fsmark\ntest_size: 1G\nfsmark:\n  test_size: 2G\n")) == [
        "4: test_size: already given as test_size at line 2; give it once"]


def test_test_size_is_capped_to_the_set_ups_device() -> None:
    request = RunRequest(benchmark="fio.write", params={"test_size": "128G", "numjobs": "2"})
    capped, said = capped_test_size(request, {"devices": {"/dev/vda": 2 << 30}})
    assert capped.params["test_size"] == "1638M"
    assert said == ["test_size 128G capped to 1638M: 80 % of the set-up's 2048 MiB device"]
    fits, nothing = capped_test_size(replace_size(request, "1G"), {"devices": {"/dev/vda": 2 << 30}})
    assert fits.params["test_size"] == "1G" and nothing == []


def replace_size(request: RunRequest, size: str) -> RunRequest:
    from dataclasses import replace

    return replace(request, params={**request.params, "test_size": size})


def test_the_reports_fsmark_job_with_nr_threads_1t(tmp_path: Path) -> None:
    """The report's fsmark scenario: nr_threads: 1t, disk: 1BRD_32G, fs: xfs, fs2: nfsv4 (refused), and the
    same job without fs2, whose 1t is one thread (the id of nr_threads: 1)."""
    text = ("suite: fsmark\n" + KERNEL + "iterations: 1x\nnr_threads: 1t\ndisk: 1BRD_32G\nfs: xfs\nfs2: nfsv4\n"
            "fsmark:\n  filesize: 4K\n  test_size: 4G\n  sync_method: fsyncBeforeClose\n"
            "  nr_files_per_directory: 1fpd\ncpufreq_governor: performance\n")
    assert problems(job(tmp_path, text))[0].startswith("7: fs2: cannot be applied: a network file system")
    (instance,) = expand_job(job(tmp_path, text.replace("fs2: nfsv4\n", "")), cpu_count=2)
    assert (instance.benchmark, instance.run_params()["threads"]) == ("fsmark.fsyncBeforeClose", "1")
    same = expand_job(job(tmp_path, text.replace("fs2: nfsv4\n", "").replace("1t", "1")), cpu_count=2)
    assert same[0].id == instance.id


def test_kbench_list_shows_the_reports_test_cases_and_says_which_this_system_lacks() -> None:
    import json
    import os
    import subprocess
    import sys

    def listing(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kbench.cli", "list", *args], capture_output=True, text=True,
                              timeout=60, env=dict(os.environ, COLUMNS="250"))

    entries = {e["name"]: e for e in json.loads(listing("--json").stdout)}
    for name in ("fsmark.fsyncBeforeClose", "pigz.gzip", "netperf.TCP_SENDFILE", "will-it-scale.futex2",
                 "will-it-scale.open2", "fio.randrw"):
        assert "unavailable" not in entries[name], name
    for name in ("unixbench.context1", "vm-scalability.anon-w-seq", "aim7.disk_rr", "reaim.five_sec",
                 "filebench.fileserver.f", "ebizzy.ebizzy", "fwq.fwq"):
        assert entries[name]["unavailable"].startswith("no Debian 12 package has"), name
    assert "built without SCTP" in entries["netperf.SCTP_STREAM_MANY"]["unavailable"]
    text = listing("unixbench").stdout
    assert "unixbench.shell8" in text and "NOT AVAILABLE here: no Debian 12 package has unixbench" in text
