"""kbench.suites.run_suite against the real tools (hackbench, stress-ng, fio, sysbench).

Short settings keep the whole module around 20 s on 2 cores. A tool that is not
installed skips its tests (scripts/install-deps.sh installs all four); the
missing-tool error itself is tested with PATH pointing at an empty directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from kbench.suites import SUITES, Suite, SuiteError, SuiteResult, ToolFailed, ToolMissing, get_suite, run_suite
from tests.faults.conftest import alive

pytestmark = pytest.mark.timeout(120)


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (scripts/install-deps.sh installs it)")


def check_result(result: SuiteResult, iterations: int) -> None:
    """Invariants every successful run keeps."""
    assert not result.interrupted
    assert len(result.iterations) == iterations
    assert [it.index for it in result.iterations] == list(range(iterations))
    assert result.command[0] == get_suite(result.test.suite).tool
    assert Path(result.tool_path).name == result.command[0]
    assert result.tool_version[0].isdigit(), result.tool_version
    raw = result.raw()
    assert list(raw) == result.test.metric_names()
    for values in raw.values():
        assert len(values) == iterations
    for it in result.iterations:
        assert it.exit_code == 0
        assert it.stdout  # the tool's full output is kept
        assert it.wall_seconds > 0
    assert all(v > 0 for v in result.values(result.primary_metric))
    record = result.to_dict()
    assert len(record["iterations"]) == iterations
    assert record["command"] == list(result.command)


@pytest.mark.parametrize("test", ["pipe-process", "pipe-thread", "socket-process", "socket-thread"])
def test_hackbench(test: str) -> None:
    need("hackbench")
    result = run_suite(f"hackbench.{test}", {"groups": 2, "fds": 10, "loops": 300}, iterations=2, timeout=60)
    check_result(result, 2)
    for it in result.iterations:
        mode = "threaded" if test.endswith("thread") else "process"
        assert f"Running in {mode} mode with 2 groups using 20 file descriptors each (== 40 tasks)" in it.stdout
        assert "Each sender will pass 300 messages of 100 bytes" in it.stdout
        # hackbench's time is within the process's own wall time
        assert 0 < it.values[f"hackbench.{test}.time"] <= it.wall_seconds


def test_stress_ng_cpu_two_iterations() -> None:
    need("stress-ng")
    result = run_suite("stress-ng.cpu", {"workers": 1, "timeout": 1}, iterations=2, timeout=60)
    check_result(result, 2)
    for it in result.iterations:
        assert "metrics:" in it.stdout and "stress-ng: metrc:" in it.stderr
        ops = it.values["stress-ng.cpu.bogo_ops"]
        # about 1 s of real time: bogo ops/s within a factor 2 of the bogo ops count
        assert 0.5 * ops < it.values["stress-ng.cpu.bogo_ops_per_s"] < 2 * ops


def test_stress_ng_switch_two_workers() -> None:
    need("stress-ng")
    result = run_suite("stress-ng.switch", {"workers": 2, "timeout": 1}, iterations=1, timeout=60)
    check_result(result, 1)
    assert "dispatching hogs: 2 switch" in result.iterations[0].stderr


def test_fio_randread_in_scratch_directory() -> None:
    need("fio")
    result = run_suite("fio.randread", {"size": "8M", "runtime": 1}, iterations=2, timeout=60)
    check_result(result, 2)
    for it in result.iterations:
        values = it.values
        assert values["fio.randread.bw"] == pytest.approx(values["fio.randread.iops"] * 4096 / 2**20, rel=1e-3)
        assert (
            0 < values["fio.randread.clat_p50"] <= values["fio.randread.clat_p99"] <= values["fio.randread.clat_p99_9"]
        )


def test_fio_write_in_a_given_directory_leaves_no_file(tmp_path: Path) -> None:
    need("fio")
    result = run_suite("fio.write", {"size": "8M", "runtime": 1, "directory": str(tmp_path)}, iterations=1, timeout=60)
    check_result(result, 1)
    assert f"--directory={tmp_path}" in result.command
    assert list(tmp_path.iterdir()) == []  # --unlink=1


def test_fio_failure_reports_exit_code_and_stderr() -> None:
    need("fio")
    with pytest.raises(ToolFailed) as raised:
        run_suite("fio.write", {"size": "8M", "runtime": 1, "directory": "/nonexistent/kbench"}, timeout=60)
    assert raised.value.exit_code == 1
    assert "is not a directory" in raised.value.stderr_tail
    assert "iteration 1 failed with exit code 1" in str(raised.value)
    assert raised.value.completed == ()


@pytest.mark.parametrize(
    ("test", "params"),
    [("cpu", {"cpu_max_prime": 5000}), ("memory", {"threads": 2}), ("threads", {"threads": 2})],
)
def test_sysbench(test: str, params: dict[str, int]) -> None:
    need("sysbench")
    iterations = 2 if test == "cpu" else 1
    result = run_suite(f"sysbench.{test}", {"time": 1, **params}, iterations=iterations, timeout=60)
    check_result(result, iterations)
    assert f"Number of threads: {params.get('threads', 1)}" in result.iterations[0].stdout


def test_timeout_kills_the_tool_and_its_workers() -> None:
    need("hackbench")
    started = time.monotonic()
    with pytest.raises(ToolFailed, match=r"did not finish within 1.5 s and was killed") as raised:
        run_suite("hackbench.pipe-process", {"groups": 2, "fds": 10, "loops": 99_999_999}, timeout=1.5)
    assert time.monotonic() - started < 10
    assert raised.value.exit_code is None
    # neither hackbench nor its forked workers (same command line) outlive the run
    left = subprocess.run(["pgrep", "-f", "hackbench -g 2 -f 10 -l 99999999"], capture_output=True, text=True)
    assert left.stdout == ""


def test_ctrl_c_keeps_finished_iterations() -> None:
    need("hackbench")
    # Ctrl-C half a second after the third iteration finished (a fixed delay from the start
    # found no finished iteration on a loaded CI machine): the run is inside a later one.
    finished: list[int] = []
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))

    def on_iteration(*_: object) -> None:
        finished.append(1)
        if len(finished) == 3:
            timer.start()

    # Python's own SIGINT handler for this test: a handler an earlier test left installed in
    # this process (one CI run's Ctrl-C never became a KeyboardInterrupt) is not run_suite's business.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result = run_suite("hackbench.pipe-process", {"groups": 2, "fds": 10, "loops": 2000}, iterations=10_000,
                           on_iteration=on_iteration, timeout=60)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert result.interrupted
    assert 3 <= len(result.iterations) < 10_000
    assert len(result.values("hackbench.pipe-process.time")) == len(result.iterations)


@pytest.mark.parametrize("suite", [s for s in SUITES if not s.unavailable], ids=lambda s: s.name)
def test_missing_tool_names_its_debian_package(suite: Suite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory
    with pytest.raises(ToolMissing) as raised:
        run_suite(suite.tests[0].full_name, iterations=1, timeout=600)
    assert f"install the Debian package {suite.package} (`apt-get install {suite.package}`)" in str(raised.value)
    if suite.name == "hackbench":
        assert str(raised.value).startswith("hackbench not found: install the Debian package rt-tests")


@pytest.mark.parametrize("suite", [s for s in SUITES if s.unavailable], ids=lambda s: s.name)
def test_a_suite_no_debian_package_has_is_refused_with_the_reason(suite: Suite) -> None:
    with pytest.raises(SuiteError, match=f"{suite.tests[0].full_name} cannot run on this system: no Debian 12 "
                                         f"package has {suite.tool}"):
        run_suite(suite.tests[0].full_name, iterations=1, timeout=600)


def _netservers() -> set[str]:
    """The living netserver processes. A zombie does not count: netserver's per-test child,
    killed with its parent, is an orphan that init reaps on its own time (in CI one stayed
    a zombie for seconds)."""
    return {p.name for p in Path("/proc").iterdir()
            if p.name.isdigit() and _comm(p) == "netserver" and alive(int(p.name))}


def _comm(proc: Path) -> str:
    try:
        return (proc / "comm").read_text().strip()
    except OSError:
        return ""


@pytest.mark.parametrize(("test", "port"), [("TCP_RR", 12871), ("UDP_RR", 12872), ("TCP_STREAM", 12873)])
def test_netperf_over_loopback(test: str, port: int) -> None:
    need("netperf")
    need("netserver")
    before = _netservers()
    result = run_suite(f"netperf.{test}", {"runtime": 1, "port": port}, iterations=2, timeout=60)
    check_result(result, 2)
    assert result.tool_version == "2.7.0" or result.tool_version[0].isdigit()
    for it in result.iterations:
        assert it.stdout.splitlines()[1].startswith("Throughput,")
    if test.endswith("_RR"):
        for it in result.iterations:
            rate, mean = it.values[f"netperf.{test}.transactions_per_s"], it.values[f"netperf.{test}.latency_mean"]
            # one transaction in flight at a time: rate × mean round trip ≈ 1 s (netperf rounds both)
            assert rate * mean * 1e-6 == pytest.approx(1.0, rel=0.05)
            assert it.values[f"netperf.{test}.latency_p50"] <= it.values[f"netperf.{test}.latency_p99"]
    assert _netservers() == before  # kbench's netserver is gone


def test_netperf_server_that_cannot_listen_is_reported(tmp_path: Path) -> None:
    need("netperf")
    need("netserver")
    import socket

    with socket.socket() as taken:  # the port is held by someone else: netserver cannot bind it
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        if port < 1024:
            pytest.skip("ephemeral port below 1024")
        with pytest.raises(SuiteError, match=f"netserver did not start listening on port {port}"):
            run_suite("netperf.TCP_RR", {"runtime": 1, "port": port}, iterations=1, timeout=60)


@pytest.mark.parametrize("threads", [False, True])
def test_perf_bench_sched_pipe(threads: bool) -> None:
    need("perf")
    from kbench.suites.perf_bench import executed

    result = run_suite("perf-bench.sched-pipe", {"loops": 5000, "threads": threads}, iterations=2, timeout=60)
    check_result(result, 2)
    for it in result.iterations:
        assert executed(it.stdout) == (5000, "threads" if threads else "processes")
        usecs, total = it.values["perf-bench.sched-pipe.usecs_per_op"], it.values["perf-bench.sched-pipe.total_time"]
        assert usecs * 5000 * 1e-6 == pytest.approx(total, abs=0.0015)  # perf prints the total in ms
        assert total < it.wall_seconds


def test_perf_bench_futex_hash() -> None:
    need("perf")
    result = run_suite("perf-bench.futex-hash", {"runtime": 1, "threads": 2, "futexes": 64}, iterations=1, timeout=60)
    check_result(result, 1)
    (it,) = result.iterations
    assert "2 threads, each operating on 64 [private] futexes for 1 secs" in it.stdout
    assert it.wall_seconds >= 1.0


# --- the 0-Day report's test cases (fsmark, pigz, netperf's TCP_SENDFILE and several clients) ---------


def test_fsmark_writes_the_files_lkp_counts() -> None:
    """fsmark.fsyncBeforeClose with LKP's sizes: test_size / filesize files in all, spread over the threads'
    directories; fs_mark's rate is over its write loop, so at least the files over the whole process's time."""
    need("fs_mark")
    params = {"test_size": "1M", "filesize": "4K", "threads": 2, "nr_files_per_directory": "32fpd"}
    result = run_suite("fsmark.fsyncBeforeClose", params, iterations=2, timeout=60)
    assert len(result.iterations) == 2 and result.tool_version == "3.3"
    assert result.command[result.command.index("-n") + 1] == "128"  # 1 MiB / 4 KiB / 2 threads
    assert result.command[result.command.index("-D") + 1] == "4"  # 128 files / 32 per directory
    for it in result.iterations:
        row = it.stdout.splitlines()[-1].split()
        assert row[1] == "256" and row[2] == "4096", it.stdout  # files written in all, bytes each
        rate = it.values["fsmark.fsyncBeforeClose.files_per_sec"]
        assert rate >= 256 / it.wall_seconds
        assert "Sync method: INBAND FSYNC: fsync() per file in write loop." in it.stdout
        assert it.values["fsmark.fsyncBeforeClose.app_overhead"] > 0


def test_pigz_throughput_is_its_input_over_its_time() -> None:
    """The input is base64 text of size × 3/4 random bytes (76 characters and a newline per line): the
    throughput times the iteration's time gives back exactly that many bytes."""
    need("pigz")
    result = run_suite("pigz.gzip", {"size": "2M", "threads": 2, "blocksize": 64}, iterations=2, timeout=60)
    raw = (2 << 20) * 3 // 4
    encoded = 4 * -(-raw // 3)
    expected = encoded + -(-encoded // 76)
    assert result.command[:2] == ("sh", "-c") and "pigz -c -b 64 -p 2 < input" in result.command[2]
    assert result.tool_version == "2.6"
    for it in result.iterations:
        assert int(it.stdout.split()[0]) == expected
        throughput = it.values["pigz.gzip.throughput"]
        assert throughput * it.wall_seconds * 2**20 == pytest.approx(expected, rel=1e-9)


def test_netperf_sendfile_with_lkp_send_size_and_two_clients() -> None:
    """TCP_SENDFILE as the report's job writes it (send_size: 10K), two netperf clients at once (LKP's
    nr_threads): two reports of 10240-byte sends, their throughputs added up."""
    need("netperf")
    need("netserver")
    before = _netservers()
    params = {"runtime": 1, "port": 12874, "send_size": "10K", "instances": 2}
    result = run_suite("netperf.TCP_SENDFILE", params, iterations=1, timeout=60)
    it = result.iterations[0]
    rows = [line.split() for line in it.stdout.splitlines() if line.strip()]
    assert len(rows) == 2 and all(row[2] == "10240" for row in rows), it.stdout
    assert all(float(row[3]) == pytest.approx(1.0, abs=0.1) for row in rows)  # each ran the runtime
    assert it.values["netperf.TCP_SENDFILE.throughput"] == pytest.approx(sum(float(row[4]) for row in rows))
    assert _netservers() == before


def test_netperf_over_ipv6_loopback() -> None:
    need("netperf")
    need("netserver")
    if not Path("/proc/net/if_inet6").exists() or "00000000000000000000000000000001" not in Path(
            "/proc/net/if_inet6").read_text():
        pytest.skip("this machine has no ::1")
    result = run_suite("netperf.TCP_RR", {"runtime": 1, "port": 12875, "ip": "ipv6"}, iterations=1, timeout=60)
    assert result.command[1:5] == ("-6", "-H", "::1", "-p")
    rate, mean = (result.iterations[0].values[f"netperf.TCP_RR.{stat}"] for stat in ("transactions_per_s",
                                                                                       "latency_mean"))
    assert rate * mean * 1e-6 == pytest.approx(1.0, rel=0.05)


def test_fio_randrw_and_lkp_test_size() -> None:
    """fio-basic's randrw (both directions' bandwidth) and LKP's test_size, the size of all jobs together."""
    need("fio")
    import json

    params = {"test_size": "8M", "numjobs": 2, "runtime": 1, "bs": "4k"}
    result = run_suite("fio.randrw", params, iterations=1, timeout=60)
    assert "--size=4194304" in result.command  # 8 MiB over 2 jobs
    it = result.iterations[0]
    job = json.loads(it.stdout[it.stdout.index("{"):])["jobs"][0]
    assert job["job options"]["rw"] == "randrw"
    for side in ("read", "write"):
        assert it.values[f"fio.randrw.{side}_bw"] == pytest.approx(job[side]["bw_bytes"] / 2**20)
        assert it.values[f"fio.randrw.{side}_iops"] == pytest.approx(job[side]["iops"])
        assert job[side]["total_ios"] > 0


def _kernel_counter(path: str, name: str) -> int:
    for line in Path(path).read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == name:
            return int(fields[1])
    raise AssertionError(f"{path} has no {name}")


def test_monitors_agree_with_the_kernels_counters_read_around_the_run() -> None:
    """hackbench with vmstat and proc-vmstat: each iteration's context switches (cs/s × its time) and page
    faults, added up, are at most what /proc/stat and /proc/vmstat, read here before and after the whole
    run, say the machine did meanwhile, and at least what the kernel charged to the processes of the run
    (getrusage of this process's children: hackbench and the shell around it)."""
    need("hackbench")
    import json
    import resource

    from kbench.catalog.benchmarks import lookup
    from kbench.contract.request import RunRequest
    from kbench.kinds.suite.run import run_suite_benchmark

    bench = lookup("hackbench.pipe-process")
    request = RunRequest(benchmark=bench.name, params={"groups": "2", "fds": "10", "loops": "3000"}, iterations=3,
                         monitors={"vmstat": 1.0, "proc-vmstat": 1.0})
    ctxt0, faults0 = _kernel_counter("/proc/stat", "ctxt"), _kernel_counter("/proc/vmstat", "pgfault")
    own0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    measurement = run_suite_benchmark(bench, request)
    own1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    ctxt1, faults1 = _kernel_counter("/proc/stat", "ctxt"), _kernel_counter("/proc/vmstat", "pgfault")
    iterations = json.loads(measurement.stderr)
    cs = measurement.columns["vmstat.system.cs"]
    switches = sum(rate * it["wall_seconds"] for rate, it in zip(cs, iterations, strict=True))
    own_switches = (own1.ru_nvcsw + own1.ru_nivcsw) - (own0.ru_nvcsw + own0.ru_nivcsw)
    # the rate is over the sampler's span (/proc/uptime: 10 ms steps), the time the whole shell's: a few % over
    assert 0.8 * own_switches <= switches <= 1.15 * (ctxt1 - ctxt0)
    faults = float(measurement.columns["proc-vmstat.pgfault"].sum())
    # the run's own processes include the snapshot and reader shells, whose start-up faults fall partly
    # outside the sampled windows: a third of them at least is hackbench's, inside
    assert 0.3 * (own1.ru_minflt - own0.ru_minflt) <= faults <= faults1 - faults0
    names = [m["name"] for m in measurement.header["metrics"]]
    assert names[0] == "hackbench.pipe-process.time" and "vmstat.system.cs" in names
    assert measurement.header["monitors"] == {"vmstat": 1.0, "proc-vmstat": 1.0}


def test_monitors_and_perf_counters_together() -> None:
    """monitors and counters on one run: perf stat counts the tool inside the monitors' shell, and each
    iteration has one monitor value and one count (reading perf's file is neither counted nor monitored)."""
    need("hackbench")
    need("perf")
    from kbench.catalog.benchmarks import lookup
    from kbench.contract.request import RunRequest
    from kbench.kinds.suite.run import run_suite_benchmark

    bench = lookup("hackbench.pipe-process")
    request = RunRequest(benchmark=bench.name, params={"groups": "1", "fds": "5", "loops": "500"}, iterations=2,
                         monitors={"vmstat": 1.0}, counters=True)
    measurement = run_suite_benchmark(bench, request)
    assert measurement.columns["vmstat.system.cs"].size == 2
    counts = measurement.header.get("counters")
    if counts is None:
        pytest.skip(f"perf stat counted nothing here: {measurement.header['warnings']}")
    assert len(counts["per_iteration"]) == 2
    switches = [it.get("context-switches") for it in counts["per_iteration"]]
    assert all(s is not None and s > 0 for s in switches), counts["per_iteration"]
