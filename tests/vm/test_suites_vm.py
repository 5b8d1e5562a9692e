"""Suites inside a Debian guest: hackbench, fio, netperf and perf bench run on the kernel under test.

One guest (``suite_vm``: no kbench.ko, the tools of hackbench, fio and netperf in the
extra initramfs archive, perf's too) serves the in-guest runs; one test boots a guest without the
tools to check that a suite run boots it again with them; one runs ``kbench compare``
of the two Debian kernels the project uses on hackbench. TCG makes workloads 10-100x
slower than on the host, so every run is tiny (2 groups of 5, 1 s of fio/netperf).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import RunRequest
from kbench.kinds import registry
from kbench.kinds.suite.run import GuestTools
from kbench.profile.counters import HARDWARE_EVENTS, parse_counters
from kbench.suites import ToolFailed, run_suite
from kbench.targets.base import TargetError
from kbench.targets.vm_target import VmTarget
from tests.vm.guest_log import TEST_KERNEL, kernel_log_problems

pytestmark = pytest.mark.vm

SMALL_HACKBENCH = {"groups": "2", "fds": "5", "loops": "50"}
SUITE_TOOLS = ("hackbench", "fio", "netperf", "netserver", "perf", "stress-ng", "sysbench")
NEW_KERNEL = os.environ.get("KBENCH_TEST_KERNEL_NEW", "deb:6.12.111+deb12-amd64")


@pytest.fixture(scope="module")
def suite_vm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VmTarget]:
    """One guest carrying the tools, shared by this module's in-guest runs."""
    console = tmp_path_factory.mktemp("suite-vm") / "console.log"
    target = VmTarget(TEST_KERNEL, console_log=console, with_module=False, suite_tools=SUITE_TOOLS)
    target.start()
    yield target
    session = target.session
    assert session is not None
    problems = kernel_log_problems(session.dmesg())
    target.close()
    assert not problems, "guest kernel log has problems:\n" + "\n".join(problems)


def measure(target: VmTarget, name: str, params: dict[str, str], iterations: int) -> tuple[dict, list[dict]]:
    bench = lookup(name)
    request = RunRequest(benchmark=bench.name, params=params, iterations=iterations)
    measurement = registry.measure(target, bench, request)
    return measurement.header, json.loads(measurement.stderr)


def test_the_tools_archive_is_recorded_and_the_guest_has_them(suite_vm: VmTarget) -> None:
    details = suite_vm.info().details
    assert details["suite_tools"]["tools"] == list(SUITE_TOOLS)
    assert details["suite_tools"]["archive"].startswith("tools-")
    assert details["kbench_ko"].startswith("not loaded")
    session = suite_vm.session
    assert session is not None
    found = session.exec(["sh", "-c", f"for t in {' '.join(SUITE_TOOLS)}; do command -v $t; done"],
                         timeout=30)
    assert found.text.split() == [f"/usr/bin/{tool}" for tool in SUITE_TOOLS]
    assert session.exec(["fio", "--version"], timeout=30).text.strip() == "fio-3.33"  # its 63 libraries load


def test_hackbench_in_the_guest(suite_vm: VmTarget) -> None:
    header, iterations = measure(suite_vm, "hackbench.pipe-process", SMALL_HACKBENCH, 2)
    assert header["where"] == "guest" and header["tool_version"] == "2.40"
    assert header["n"] == 2 and len(iterations) == 2
    for it in iterations:
        assert "Running in process mode with 2 groups using 10 file descriptors each (== 20 tasks)" in it["stdout"]
        assert "Each sender will pass 50 messages of 100 bytes" in it["stdout"]
        assert 0 < it["values"]["hackbench.pipe-process.time"] < it["wall_seconds"]
    assert suite_vm.info().kernel_release == TEST_KERNEL.removeprefix("deb:")


def test_fio_in_the_guest_on_its_scratch_disk(suite_vm: VmTarget) -> None:
    session = suite_vm.session
    assert session is not None
    disk = suite_vm.info().details["scratch_disk"]
    assert (disk["mount"], disk["device"]) == ("/mnt/scratch", "/dev/vda")
    mounts = session.exec(["cat", "/proc/mounts"], timeout=30).text
    assert "/dev/vda /mnt/scratch ext4" in mounts
    header, iterations = measure(suite_vm, "fio.randwrite", {"size": "4M", "runtime": "1", "direct": "1"}, 1)
    assert header["where"] == "guest"
    (it,) = iterations
    report = json.loads(it["stdout"][it["stdout"].index("{"):])
    job = report["jobs"][0]
    assert job["write"]["total_ios"] > 0 and job["job options"]["direct"] == "1"  # O_DIRECT: a real block device
    assert it["values"]["fio.randwrite.iops"] == pytest.approx(job["write"]["iops"])
    # the scratch directory (on the disk) is removed afterwards
    assert session.exec(["sh", "-c", "ls /mnt/scratch | grep kbench-"], timeout=30).text.strip() == ""


def test_fio_in_the_guest_on_tmpfs(suite_vm: VmTarget) -> None:
    session = suite_vm.session
    assert session is not None
    assert "tmpfs /tmp tmpfs" in session.exec(["cat", "/proc/mounts"], timeout=30).text
    header, iterations = measure(suite_vm, "fio.read", {"size": "2M", "runtime": "1", "directory": "/tmp"}, 1)
    assert "--directory=/tmp" in header["command"]
    assert iterations[0]["values"]["fio.read.iops"] > 0
    with pytest.raises(TargetError, match=r"fio\.read \(iteration 1: .*O_DIRECT"):  # tmpfs refuses O_DIRECT
        measure(suite_vm, "fio.read", {"size": "2M", "runtime": "1", "directory": "/tmp", "direct": "1"}, 1)


def test_netperf_tcp_rr_in_the_guest(suite_vm: VmTarget) -> None:
    session = suite_vm.session
    assert session is not None
    header, iterations = measure(suite_vm, "netperf.TCP_RR", {"runtime": "1"}, 1)
    assert header["where"] == "guest"
    (it,) = iterations
    rate, mean = it["values"]["netperf.TCP_RR.transactions_per_s"], it["values"]["netperf.TCP_RR.latency_mean"]
    assert rate > 0 and rate * mean * 1e-6 == pytest.approx(1.0, rel=0.05)
    assert session.exec(["pidof", "netserver"], timeout=30).rc != 0  # stopped after the run


def test_perf_bench_sched_pipe_in_the_guest(suite_vm: VmTarget) -> None:
    header, iterations = measure(suite_vm, "perf-bench.sched-pipe", {"loops": "200"}, 1)
    assert header["where"] == "guest" and header["tool_version"][0].isdigit()
    (it,) = iterations
    assert "Executed 200 pipe operations between two processes" in it["stdout"]
    usecs, total = it["values"]["perf-bench.sched-pipe.usecs_per_op"], it["values"]["perf-bench.sched-pipe.total_time"]
    assert usecs * 200 * 1e-6 == pytest.approx(total, abs=0.0015)


def test_hackbench_counted_and_profiled_in_the_guest(suite_vm: VmTarget) -> None:
    # perf stat and perf record are the guest's (perf carried in with its libraries): they count
    # and sample the guest kernel, whose TCG CPU has no PMU
    bench = lookup("hackbench.pipe-process")
    request = RunRequest(benchmark=bench.name, params=SMALL_HACKBENCH, iterations=2, counters=True)
    measurement = registry.measure(suite_vm, bench, request)
    counters = parse_counters(measurement.header)
    assert counters is not None and counters.source == "perf stat" and counters.operation == "iteration"
    assert counters.operations == 2
    iterations = json.loads(measurement.stderr)
    wall_s = sum(it["wall_seconds"] for it in iterations)
    task_clock_s = (counters.value("task-clock") or 0) * 1e-9
    assert 0 < task_clock_s <= wall_s * suite_vm.cpus  # CPU time of the tool's tasks, on 2 CPUs at most
    # 20 tasks pass 50 messages each through pipes: readers block, so they switch
    assert (counters.value("context-switches") or 0) >= 20
    assert not any(counters.event(name).supported for name in HARDWARE_EVENTS)  # type: ignore[union-attr]
    found = registry.profile(suite_vm, bench, RunRequest(benchmark=bench.name, params=SMALL_HACKBENCH), 1.0)
    assert found.details["where"] == "guest" and found.event == "cpu-clock"
    # Every sample is hackbench's, or of the moment perf's forked child had not yet exec'd it
    # (perf names that task perf-exec; a loaded CI host caught samples there)
    roots = Counter[str]()
    for stack, weight in found.stacks.items():
        roots[stack.split(";", 1)[0]] += weight
    assert set(roots) <= {"hackbench", "perf-exec"}, roots
    assert roots["hackbench"] > 0.5 * sum(roots.values()), roots
    children = found.children_shares()
    assert children.get("pipe_write_[k]", 0) > 0 and children.get("pipe_read_[k]", 0) > 0


@pytest.mark.parametrize(("name", "params"), [("stress-ng.cpu", {"timeout": "1"}), ("sysbench.cpu", {"time": "1"})])
def test_stress_ng_and_sysbench_in_the_guest(suite_vm: VmTarget, name: str, params: dict[str, str]) -> None:
    header, iterations = measure(suite_vm, name, params, 1)
    assert header["where"] == "guest"
    (it,) = iterations
    primary = lookup(name).metric
    assert it["values"][primary] > 0


def test_a_guest_run_past_its_timeout_is_killed_with_its_workers(suite_vm: VmTarget) -> None:
    session = suite_vm.session
    assert session is not None
    with pytest.raises(ToolFailed, match=r"iteration 1 did not finish within 3 s and was killed") as raised:
        # 10^6 messages per sender take minutes under TCG: the guest kills the process group
        run_suite("hackbench.pipe-process", {**SMALL_HACKBENCH, "loops": "1000000"}, iterations=1, timeout=3,
                  host=GuestTools(session))
    assert raised.value.exit_code is None
    assert session.exec(["pidof", "hackbench"], timeout=30).rc != 0  # no worker left behind
    assert session.exec(["sh", "-c", "ls -d /tmp/kbench-hackbench-* 2>/dev/null"], timeout=30).text == ""


def test_a_guest_without_the_tool_is_booted_again_with_it(tmp_path: Path) -> None:
    with VmTarget(TEST_KERNEL, with_module=False, console_log=tmp_path / "console.log") as target:
        target.start()
        assert target.booted_tools == ()
        header, iterations = measure(target, "hackbench.pipe-thread", SMALL_HACKBENCH, 1)
        assert target.booted_tools == ("hackbench",)
        assert header["where"] == "guest" and "Running in threaded mode" in iterations[0]["stdout"]


def test_cli_run_of_a_suite_in_a_debian_kernel(tmp_path: Path) -> None:
    env = dict(os.environ, KBENCH_DB=str(tmp_path / "k.db"))
    args = ["run", "hackbench.socket-process", "--kernel", TEST_KERNEL, "--iterations", "2", "--json",
            *(f"-p{key}={value}" for key, value in SMALL_HACKBENCH.items())]
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["metric"] == "hackbench.socket-process.time" and run["n"] == 2
    shown = subprocess.run([sys.executable, "-m", "kbench.cli", "show", str(run["run_id"]), "--json"],
                           capture_output=True, text=True, env=env, check=True)
    target = json.loads(shown.stdout)["target"]
    assert target["kind"] == "vm" and target["kernel_release"] == TEST_KERNEL.removeprefix("deb:")
    assert target["details"]["suite_tools"]["tools"] == ["hackbench"]  # only what the run needs
    assert target["details"]["kbench_ko"].startswith("not loaded")


def test_job_file_with_a_suite_on_a_debian_kernel(tmp_path: Path) -> None:
    job = tmp_path / "hackbench.yaml"
    job.write_text(f"suite: hackbench\ntest: socket-thread\nkernel: {TEST_KERNEL}\niterations: 2\n"
                   "hackbench:\n  groups: 2\n  fds: 5\n  loops: 50\n")
    env = dict(os.environ, KBENCH_DB=str(tmp_path / "k.db"))
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", "run", str(job), "--json"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (entry,) = json.loads(proc.stdout)
    (run_id,) = entry["runs"]
    shown = json.loads(subprocess.run([sys.executable, "-m", "kbench.cli", "show", str(run_id), "--json"],
                                      capture_output=True, text=True, env=env, check=True).stdout)
    assert shown["status"] == "complete" and shown["target"]["kind"] == "vm"
    assert shown["target"]["details"]["suite_tools"]["tools"] == ["hackbench"]


def test_compare_two_debian_kernels_on_hackbench(tmp_path: Path) -> None:
    env = dict(os.environ, KBENCH_DB=str(tmp_path / "k.db"))
    args = ["compare", "hackbench.pipe-process", "--kernel", TEST_KERNEL, "--kernel", NEW_KERNEL,
            *(f"-p{key}={value}" for key, value in SMALL_HACKBENCH.items()),
            "--trials", "4", "--min-trials", "4", "--trials-per-boot", "4", "--fixed", "--json"]
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    (metric,) = [m for m in report["metrics"] if m["metric"] == "hackbench.pipe-process.time"]
    assert metric["verdict"] in ("regression", "improvement", "no change", "inconclusive")
    assert metric["trials"] == {"base": 4, "new": 4}  # one boot per side
    assert all(value > 0 for value in metric["base_trials"] + metric["new_trials"])
    assert metric["base_label"].endswith(TEST_KERNEL.removeprefix("deb:"))
    assert metric["new_label"].endswith(NEW_KERNEL.removeprefix("deb:"))
