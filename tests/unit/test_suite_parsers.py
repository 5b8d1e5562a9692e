"""kbench.suites: parsers on captured real tool output, command building, parameter checks.

The captures in tests/data/suites/ were recorded on the development VM with
record.sh (hackbench 2.40, stress-ng 0.15.06, fio 3.33, sysbench 1.0.20). Expected
values are read off those files by eye and hard-coded here; each parser is also
cross-checked against a second field of the same report (e.g. fio's iops against
total_ios / runtime).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbench.contract.benchmark import BadParameter
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.suites import (
    SUITES,
    BadSuiteParameter,
    ParamValue,
    SuiteParseError,
    ToolFailed,
    ToolMissing,
    UnknownSuiteTest,
    build_command,
    get_suite,
    parse,
    port_listening,
    run_suite,
    suite_benchmarks,
)
from kbench.suites import perf_bench as perf_bench_suite
from kbench.suites import stress_ng as stress_ng_suite

DATA = Path(__file__).resolve().parents[1] / "data" / "suites"


def stdout(name: str) -> str:
    return (DATA / f"{name}.stdout").read_text()


def stderr(name: str) -> str:
    return (DATA / f"{name}.stderr").read_text()


def exit_code(name: str) -> int:
    return int((DATA / f"{name}.rc").read_text())


# --- hackbench --------------------------------------------------------------------


def test_hackbench_pipe_process_time() -> None:
    assert parse("hackbench.pipe-process", stdout("hackbench-pipe-process")) == {"hackbench.pipe-process.time": 0.032}


def test_hackbench_socket_thread_time() -> None:
    assert parse("hackbench.socket-thread", stdout("hackbench-socket-thread")) == {
        "hackbench.socket-thread.time": 0.107
    }


def test_hackbench_output_of_the_other_task_kind_is_refused() -> None:
    with pytest.raises(SuiteParseError, match="threaded mode"):
        parse("hackbench.socket-process", stdout("hackbench-socket-thread"))


def test_hackbench_failure_has_no_time() -> None:
    assert exit_code("hackbench-fds-exhausted") == 1
    assert "Too many open files" in stderr("hackbench-fds-exhausted")
    with pytest.raises(SuiteParseError, match="Time:"):
        parse("hackbench.socket-process", stdout("hackbench-fds-exhausted"))


def test_hackbench_command_uses_short_options_with_flags_last() -> None:
    # hackbench 2.40 mis-parses long options (it passes optind as getopt_long's index)
    assert build_command("hackbench.pipe-thread", {"groups": "2", "loops": 50}) == [
        "hackbench", "-g", "2", "-f", "20", "-l", "50", "-s", "100", "-p", "-T",
    ]  # fmt: skip
    assert build_command("hackbench.socket-process")[-1] == "-P"
    assert "-p" not in build_command("hackbench.socket-process")


# --- stress-ng ----------------------------------------------------------------------


def test_stress_ng_yaml_one_stressor() -> None:
    values = parse("stress-ng.cpu", stdout("stress-ng-cpu"))
    assert values == {
        "stress-ng.cpu.bogo_ops_per_s": 770.466893,
        "stress-ng.cpu.bogo_ops_per_s_usr_sys": 1531.357116,
        "stress-ng.cpu.bogo_ops": 772.0,
    }
    # cross-check against the YAML's own times: bogo-ops / wall-clock-time, / (user+system)
    assert values["stress-ng.cpu.bogo_ops_per_s"] == pytest.approx(772 / 1.001990, rel=1e-5)
    assert values["stress-ng.cpu.bogo_ops_per_s_usr_sys"] == pytest.approx(772 / (0.494849 + 0.009279), rel=1e-5)


def test_stress_ng_metrics_brief_table_agrees_with_yaml() -> None:
    from_table = parse("stress-ng.cpu", stderr("stress-ng-cpu"))
    assert from_table == {
        "stress-ng.cpu.bogo_ops_per_s": 770.47,
        "stress-ng.cpu.bogo_ops_per_s_usr_sys": 1531.36,
        "stress-ng.cpu.bogo_ops": 772.0,
    }
    from_yaml = parse("stress-ng.cpu", stdout("stress-ng-cpu"))
    for name, value in from_yaml.items():
        assert from_table[name] == pytest.approx(value, abs=0.005)


def test_stress_ng_several_stressors() -> None:
    expected = {
        "cpu": (1642.972335, 1579.907877, 1644),
        "switch": (31852.298565, 61849.869125, 31876),
        "pipe": (124604.445503, 340228.159712, 124663),
    }
    every = stress_ng_suite.parse_all(stdout("stress-ng-three-stressors"))
    assert len(every) == 9
    for stressor, (real, usr_sys, ops) in expected.items():
        assert every[f"stress-ng.{stressor}.bogo_ops_per_s"] == real
        assert every[f"stress-ng.{stressor}.bogo_ops_per_s_usr_sys"] == usr_sys
        assert every[f"stress-ng.{stressor}.bogo_ops"] == ops
    # the table on stderr names the same stressors with the same (rounded) values
    table = stress_ng_suite.parse_all(stderr("stress-ng-three-stressors"))
    assert table.keys() == every.keys()
    assert table["stress-ng.switch.bogo_ops_per_s"] == 31852.30
    # a test's parse keeps its own stressor only
    assert parse("stress-ng.switch", stdout("stress-ng-three-stressors")) == {
        "stress-ng.switch.bogo_ops_per_s": 31852.298565,
        "stress-ng.switch.bogo_ops_per_s_usr_sys": 61849.869125,
        "stress-ng.switch.bogo_ops": 31876.0,
    }


def test_stress_ng_output_without_the_requested_stressor() -> None:
    with pytest.raises(SuiteParseError, match=r"stress-ng\.fork\.bogo_ops_per_s"):
        parse("stress-ng.fork", stdout("stress-ng-three-stressors"))


def test_stress_ng_unsupported_stressor_exits_0_but_reports_nothing() -> None:
    assert exit_code("stress-ng-unsupported") == 0
    assert stdout("stress-ng-unsupported") == ""
    assert "No stress workers invoked" in stderr("stress-ng-unsupported")
    for text in (stdout("stress-ng-unsupported"), stderr("stress-ng-unsupported")):
        with pytest.raises(SuiteParseError, match="no stressor metrics"):
            parse("stress-ng.cpu", text)


def test_stress_ng_command_writes_yaml_to_stdout() -> None:
    assert build_command("stress-ng.switch", {"workers": 0, "timeout": "3"}) == [
        "stress-ng", "--switch", "0", "--timeout", "3s", "--metrics-brief", "--yaml", "/dev/stdout",
    ]  # fmt: skip


# --- fio ----------------------------------------------------------------------------


def test_fio_randread_json() -> None:
    values = parse("fio.randread", stdout("fio-randread"))
    assert values == {
        "fio.randread.iops": 9579.420579,
        "fio.randread.bw": 39237306 / 2**20,
        "fio.randread.clat_mean": 102478.418396,
        "fio.randread.clat_p50": 64256.0,
        "fio.randread.clat_p90": 90624.0,
        "fio.randread.clat_p99": 1548288.0,
        "fio.randread.clat_p99_9": 4145152.0,
    }
    # cross-checks: total_ios 9589 in runtime 1001 ms; 4 KiB per I/O
    assert values["fio.randread.iops"] == pytest.approx(9589 / 1.001, rel=1e-6)
    assert values["fio.randread.bw"] == pytest.approx(values["fio.randread.iops"] * 4096 / 2**20, rel=1e-6)


def test_fio_two_jobs_reported_as_one_after_notes() -> None:
    text = stdout("fio-randwrite-2jobs")
    assert text.startswith("note: both iodepth")
    values = parse("fio.randwrite", text)
    assert values["fio.randwrite.iops"] == 161971.028971
    assert values["fio.randwrite.iops"] == pytest.approx(162133 / 1.001, rel=1e-6)  # total_ios / runtime
    assert values["fio.randwrite.bw"] == pytest.approx(663433334 / 2**20)
    assert values["fio.randwrite.clat_p99"] == 7008.0
    assert values["fio.randwrite.clat_p99_9"] == 272384.0


def test_fio_sequential_read_with_64k_blocks() -> None:
    values = parse("fio.read", stdout("fio-read"))
    assert values["fio.read.iops"] == 15473.526474
    assert values["fio.read.bw"] == pytest.approx(values["fio.read.iops"] * 65536 / 2**20, rel=1e-6)
    assert values["fio.read.clat_p50"] == 6624.0


def test_fio_report_of_another_job_is_refused() -> None:
    with pytest.raises(SuiteParseError, match="rw=randwrite"):
        parse("fio.randread", stdout("fio-randwrite-2jobs"))


def test_fio_failure_output_has_no_json() -> None:
    assert exit_code("fio-missing-directory") == 1
    assert "is not a directory" in stderr("fio-missing-directory")
    with pytest.raises(SuiteParseError, match="no JSON report"):
        parse("fio.write", stdout("fio-missing-directory"))


def test_fio_command() -> None:
    argv = build_command("fio.randwrite", {"bs": "64k", "size": "8M", "runtime": 2, "direct": "yes"})
    assert argv[:3] == ["fio", "--name=randwrite", "--rw=randwrite"]
    expected = {"--bs=64k", "--size=8M", "--runtime=2", "--time_based", "--direct=1", "--ioengine=psync"}
    assert expected | {"--group_reporting", "--unlink=1", "--output-format=json"} <= set(argv)
    assert not any(a.startswith("--directory") for a in argv)
    assert "--directory=/srv/io" in build_command("fio.read", {"directory": "/srv/io"})


# --- sysbench -----------------------------------------------------------------------


def test_sysbench_cpu() -> None:
    values = parse("sysbench.cpu", stdout("sysbench-cpu"))
    assert values == {
        "sysbench.cpu.events_per_s": 2020.26,
        "sysbench.cpu.latency_avg": 0.49,
        "sysbench.cpu.latency_p95": 4.25,
        "sysbench.cpu.latency_max": 25.23,
    }
    # sysbench's rate vs total number of events / total time (it times slightly differently)
    assert values["sysbench.cpu.events_per_s"] == pytest.approx(2027 / 1.0026, rel=2e-3)


def test_sysbench_memory_two_threads() -> None:
    values = parse("sysbench.memory", stdout("sysbench-memory-2threads"))
    assert values == {"sysbench.memory.mib_per_s": 2970.20, "sysbench.memory.ops_per_s": 3041485.49}
    # 1 KiB blocks: operations per second / 1024 is MiB per second
    assert values["sysbench.memory.mib_per_s"] == pytest.approx(values["sysbench.memory.ops_per_s"] / 1024, rel=1e-5)


def test_sysbench_threads_four_threads_rate_is_events_over_time() -> None:
    values = parse("sysbench.threads", stdout("sysbench-threads-4threads"))
    assert values == {
        "sysbench.threads.events_per_s": 252 / 1.0028,
        "sysbench.threads.latency_avg": 15.91,
        "sysbench.threads.latency_p95": 18.95,
        "sysbench.threads.latency_max": 24.34,
    }
    # 4 threads busy for the whole run: events × mean latency ≈ latency sum (4008.85 ms)
    assert 252 * values["sysbench.threads.latency_avg"] == pytest.approx(4008.85, rel=0.01)


def test_sysbench_report_of_another_test_is_refused() -> None:
    with pytest.raises(SuiteParseError, match="its cpu test"):
        parse("sysbench.threads", stdout("sysbench-cpu"))
    with pytest.raises(SuiteParseError, match="its threads test"):
        parse("sysbench.memory", stdout("sysbench-threads-4threads"))


def test_sysbench_failure_output() -> None:
    assert exit_code("sysbench-bad-option") == 1
    assert "invalid option" in stderr("sysbench-bad-option")
    with pytest.raises(SuiteParseError):
        parse("sysbench.cpu", stdout("sysbench-bad-option"))


def test_sysbench_command() -> None:
    assert build_command("sysbench.memory", {"oper": "read", "access_mode": "rnd", "time": 1}) == [
        "sysbench", "memory", "--threads=1", "--time=1", "--memory-block-size=1K", "--memory-total-size=100G",
        "--memory-oper=read", "--memory-access-mode=rnd", "run",
    ]  # fmt: skip


# --- netperf (record-netperf.sh) ------------------------------------------------------


def test_netperf_tcp_rr() -> None:
    values = parse("netperf.TCP_RR", stdout("netperf-TCP_RR"))
    assert values == {
        "netperf.TCP_RR.transactions_per_s": 104053.49,
        "netperf.TCP_RR.latency_mean": 9.54,
        "netperf.TCP_RR.latency_p50": 10.0,
        "netperf.TCP_RR.latency_p90": 11.0,
        "netperf.TCP_RR.latency_p99": 21.0,
    }
    # one transaction in flight: the mean round trip is the inverse of the rate (within 1%)
    assert values["netperf.TCP_RR.latency_mean"] == pytest.approx(1e6 / values["netperf.TCP_RR.transactions_per_s"],
                                                                  rel=0.01)


def test_netperf_udp_rr() -> None:
    values = parse("netperf.UDP_RR", stdout("netperf-UDP_RR"))
    assert values["netperf.UDP_RR.transactions_per_s"] == 111570.72
    assert values["netperf.UDP_RR.latency_p99"] == 19.0
    assert values["netperf.UDP_RR.latency_mean"] == pytest.approx(1e6 / 111570.72, rel=0.01)


def test_netperf_tcp_stream_reports_throughput_only() -> None:
    assert parse("netperf.TCP_STREAM", stdout("netperf-TCP_STREAM")) == {"netperf.TCP_STREAM.throughput": 34564.85}


def test_netperf_report_of_another_test_is_refused() -> None:
    with pytest.raises(SuiteParseError, match=r"a UDP test, not of netperf.TCP_RR"):
        parse("netperf.TCP_RR", stdout("netperf-UDP_RR"))
    with pytest.raises(SuiteParseError, match=r"throughput in '10\^6bits/s', netperf.TCP_RR expects Trans/s"):
        parse("netperf.TCP_RR", stdout("netperf-TCP_STREAM"))


def test_netperf_without_a_server() -> None:
    assert exit_code("netperf-no-server") != 0
    assert "are you sure there is a netserver listening" in stdout("netperf-no-server")
    with pytest.raises(SuiteParseError, match="no CSV report"):
        parse("netperf.TCP_RR", stdout("netperf-no-server"))


def test_netperf_uncollected_statistic_is_refused() -> None:
    text = stdout("netperf-TCP_RR").replace(",9.54,", ",-1.00,")
    with pytest.raises(SuiteParseError, match=r"did not measure 'Mean Latency Microseconds'"):
        parse("netperf.TCP_RR", text)


def test_netperf_command_and_server() -> None:
    fields = "THROUGHPUT,THROUGHPUT_UNITS,MEAN_LATENCY,P50_LATENCY,P90_LATENCY,P99_LATENCY,ELAPSED_TIME,PROTOCOL"
    assert build_command("netperf.TCP_RR", {"runtime": 1}) == [
        "netperf", "-4", "-H", "127.0.0.1", "-p", "12867", "-t", "TCP_RR", "-l", "1", "--", "-r", "1,1", "-o", fields,
    ]
    assert build_command("netperf.TCP_STREAM", {"size": 4096})[-4:] == ["-m", "4096", "-o", fields]
    suite = get_suite("netperf")
    assert suite.tools == ("netperf", "netserver")
    assert suite.server is not None
    test = suite.test("UDP_RR")
    server = suite.server(test, test.resolve({"port": 20000}))
    assert (server.argv, server.port) == (["netserver", "-D", "-4", "-L", "127.0.0.1", "-p", "20000"], 20000)
    with pytest.raises(BadSuiteParameter, match="port must be ≥ 1024"):
        build_command("netperf.UDP_RR", {"port": 80})


def test_port_listening_reads_proc_net_tcp() -> None:
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    listen = "   2: 0100007F:3243 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 29986 1\n"
    established = "   3: 0100007F:3243 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 29987 1\n"
    assert port_listening(header + listen, "", 12867)
    assert not port_listening(header + established, "", 12867)
    assert not port_listening(header + listen, "", 12868)
    assert port_listening("", header + listen.replace("0100007F:3243", "00000000000000000000000000000000:3243"), 12867)


# --- perf bench (record-perf-bench.sh) -----------------------------------------------


def test_perf_bench_sched_pipe_processes() -> None:
    values = parse("perf-bench.sched-pipe", stdout("perf-bench-sched-pipe"))
    assert values == {
        "perf-bench.sched-pipe.usecs_per_op": 7.40285,
        "perf-bench.sched-pipe.ops_per_s": 135083.0,
        "perf-bench.sched-pipe.total_time": 0.148,
    }
    # the three figures are one measurement: 20000 round trips in the total time
    assert values["perf-bench.sched-pipe.usecs_per_op"] == pytest.approx(0.148e6 / 20000, rel=0.01)
    assert values["perf-bench.sched-pipe.ops_per_s"] == pytest.approx(1e6 / 7.40285, abs=1)
    assert perf_bench_suite.executed(stdout("perf-bench-sched-pipe")) == (20000, "processes")


def test_perf_bench_sched_pipe_threads() -> None:
    values = parse("perf-bench.sched-pipe", stdout("perf-bench-sched-pipe-threads"))
    assert values["perf-bench.sched-pipe.usecs_per_op"] == 2.7145
    assert perf_bench_suite.executed(stdout("perf-bench-sched-pipe-threads")) == (20000, "threads")


def test_perf_bench_futex_hash() -> None:
    assert parse("perf-bench.futex-hash", stdout("perf-bench-futex-hash")) == {
        "perf-bench.futex-hash.ops_per_s": 1766912.0
    }
    with pytest.raises(SuiteParseError, match=r"of sched pipe, not of perf-bench\.futex-hash"):
        parse("perf-bench.futex-hash", stdout("perf-bench-sched-pipe"))


def test_perf_bench_failure_output() -> None:
    assert exit_code("perf-bench-bad-option") == 129
    assert "unknown option `no-such-option'" in stderr("perf-bench-bad-option")
    with pytest.raises(SuiteParseError, match="no usecs/op"):
        parse("perf-bench.sched-pipe", stdout("perf-bench-bad-option"))


def test_perf_bench_commands() -> None:
    assert build_command("perf-bench.sched-pipe", {"loops": 500}) == ["perf", "bench", "sched", "pipe", "-l", "500"]
    assert build_command("perf-bench.sched-pipe", {"threads": "1"})[-1] == "-T"
    assert build_command("perf-bench.futex-hash", {"runtime": 1, "shared": "yes"}) == [
        "perf", "bench", "futex", "hash", "-r", "1", "-t", "2", "-f", "1024", "-s", "-S",
    ]


# --- versions -----------------------------------------------------------------------


def test_version_readers_on_the_recorded_version_lines() -> None:
    lines = (DATA / "versions.txt").read_text().splitlines()
    versions = {suite.name: suite.version("\n".join(lines)) for suite in SUITES}
    assert versions == {
        "hackbench": "2.40", "stress-ng": "0.15.06", "fio": "3.33", "sysbench": "1.0.20", "netperf": "2.7.0",
        "perf-bench": "6.1.192", "fsmark": "3.3", "pigz": "2.6",
        **{suite.name: "" for suite in SUITES if suite.unavailable},
    }
    assert get_suite("hackbench").version("something else\n") == "something else"


# --- parameters and names -----------------------------------------------------------


@pytest.mark.parametrize(
    ("test", "params", "message"),
    [
        ("fio.randread", {"bss": "4k"}, r"no parameter 'bss' \(did you mean bs\?\); its parameters: bs, size"),
        ("fio.randread", {"bs": "4x"}, r"bs must be a size such as 4096, 4k, 1M or 2G, got '4x'"),
        ("fio.randread", {"direct": "maybe"}, r"direct must be 0 or 1, got 'maybe'"),
        ("fio.randread", {"ioengine": "io uring"}, r"ioengine must be an fio engine name"),
        ("hackbench.pipe-process", {"groups": 0}, r"groups must be ≥ 1, got 0"),
        ("hackbench.pipe-process", {"fds": "many"}, r"fds must be an integer, got 'many'"),
        ("hackbench.pipe-process", {"fds": 5000}, r"fds must be ≤ 1000, got 5000"),
        ("stress-ng.cpu", {"timeout": True}, r"timeout must be a number"),
        (
            "sysbench.memory",
            {"oper": "wrte"},
            r"oper must be one of read, write, none, got 'wrte' \(did you mean write",
        ),
        ("sysbench.cpu", {"block_size": "1K"}, r"sysbench.cpu has no parameter 'block_size'"),
    ],
)
def test_bad_parameters_are_named(test: str, params: dict[str, ParamValue], message: str) -> None:
    with pytest.raises(BadSuiteParameter, match=message) as raised:
        build_command(test, params)
    assert isinstance(raised.value, BadParameter)  # the CLI's existing handling applies


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("fio.randred", r"fio has no test 'randred' \(did you mean randread"),
        ("stressng.cpu", r"unknown suite 'stressng' \(did you mean stress-ng\?\)"),
        ("cpu", r"'cpu' is not a <suite>.<test> name \(did you mean stress-ng.cpu or sysbench.cpu\?\)"),
    ],
)
def test_unknown_names_get_suggestions(name: str, message: str) -> None:
    with pytest.raises(UnknownSuiteTest, match=message):
        build_command(name)


def test_every_default_is_valid_and_builds_a_command() -> None:
    for bench in suite_benchmarks():
        if bench.unavailable:  # no tool to build a command for: refused with the reason instead
            with pytest.raises(BadParameter, match=f"{bench.name} cannot run on this system: (no Debian 12 package|"
                                                   "Debian 12's netperf 2.7.0 is built without SCTP)"):
                build_command(bench.name)
            continue
        argv = build_command(bench.name)
        assert argv[0] in (get_suite(bench.suite).tool, "sh")


# --- catalog listing ----------------------------------------------------------------


def test_suite_benchmarks_follow_the_naming_contract() -> None:
    benches = suite_benchmarks()
    names = [b.name for b in benches]
    assert len(names) == len(set(names)) == 96
    assert {"hackbench.pipe-process", "stress-ng.cpu", "fio.randread", "sysbench.cpu", "sysbench.memory"} <= set(names)
    for bench in benches:
        assert bench.name == f"{bench.suite}.{bench.test}"
        assert bench.metric == bench.metrics[0].name
        assert (bench.unit, bench.direction) == (bench.metrics[0].unit, bench.metrics[0].direction)
        for metric in bench.metrics:
            assert re.fullmatch(re.escape(bench.name) + r"\.[a-z0-9_]+", metric.name)
            assert metric.direction in (LOWER_IS_BETTER, HIGHER_IS_BETTER)
            assert metric.unit and metric.description
        assert bench.description and all(p.description for p in bench.params)


def test_primary_metrics_named_in_the_issue() -> None:
    by_name = {m.name: m for b in suite_benchmarks() for m in b.metrics}
    assert (by_name["hackbench.pipe-process.time"].unit, by_name["hackbench.pipe-process.time"].direction) == (
        "s",
        LOWER_IS_BETTER,
    )
    assert by_name["stress-ng.cpu.bogo_ops_per_s"].direction == HIGHER_IS_BETTER
    assert by_name["fio.randread.iops"].direction == HIGHER_IS_BETTER
    assert (by_name["fio.randread.clat_p99"].unit, by_name["fio.randread.clat_p99"].direction) == (
        "ns",
        LOWER_IS_BETTER,
    )
    assert by_name["sysbench.cpu.events_per_s"].direction == HIGHER_IS_BETTER


def test_as_benchmark_maps_to_the_catalog() -> None:
    bench = next(b for b in suite_benchmarks() if b.name == "fio.randread")
    catalog = bench.as_benchmark()
    assert (catalog.name, catalog.kind, catalog.workload) == ("fio.randread", "suite", "fio.randread")
    assert (catalog.metric, catalog.unit, catalog.direction) == ("fio.randread.iops", "IO/s", HIGHER_IS_BETTER)
    assert catalog.param("bs").default == "4k"
    catalog.validate_params({"runtime": "1", "direct": "1"})


# --- errors -------------------------------------------------------------------------


def test_tool_missing_names_the_debian_package() -> None:
    assert str(ToolMissing("hackbench", "rt-tests")) == (
        "hackbench not found: install the Debian package rt-tests (`apt-get install rt-tests`)"
    )


def test_tool_failed_reports_exit_code_and_stderr_tail() -> None:
    error = ToolFailed(
        benchmark="fio.write",
        command="fio --name=write",
        iteration=1,
        reason="failed with exit code 1",
        exit_code=1,
        stderr_tail=stderr("fio-missing-directory").strip(),
    )
    text = str(error)
    assert text.startswith("fio.write: iteration 2 failed with exit code 1: fio --name=write")
    assert "last lines of its stderr" in text and "is not a directory" in text


# --- run_suite input checks (before any tool runs) -----------------------------------


def test_run_suite_refuses_a_timeout_shorter_than_the_run() -> None:
    with pytest.raises(ValueError, match=r"timeout 5 s leaves no time for timeout=10 s"):
        run_suite("stress-ng.cpu", {"timeout": 10}, timeout=5)
    with pytest.raises(ValueError, match=r"iterations must be ≥ 1"):
        run_suite("sysbench.cpu", iterations=0)


def test_fio_directory_must_be_absolute() -> None:
    with pytest.raises(BadSuiteParameter, match=r"directory must be an absolute path \(or empty\), got 'data'"):
        build_command("fio.read", {"directory": "data"})


# --- fsmark (fs_mark 3.3, recorded by record.sh) ---------------------------------------------------


def test_fsmark_parses_fs_marks_result_row_and_takes_lkps_spellings() -> None:
    out = stdout("fsmark-fsyncBeforeClose")
    assert parse("fsmark.fsyncBeforeClose", out) == {"fsmark.fsyncBeforeClose.files_per_sec": 3947.9,
                                                     "fsmark.fsyncBeforeClose.app_overhead": 888.0}
    row = out.splitlines()[-1]
    with pytest.raises(SuiteParseError, match="2 result rows"):
        parse("fsmark.fsyncBeforeClose", out + row + "\n")
    with pytest.raises(SuiteParseError, match="no result table"):
        parse("fsmark.fsyncBeforeClose", "Must specify at least one directory with -d switch\n")
    # LKP's 1fpd and 16d; files per thread: test_size / max(filesize, 4 KiB) / threads
    argv = build_command("fsmark.NoSync", {"nr_directories": "16d", "nr_files_per_directory": "4fpd",
                                           "test_size": "2M", "filesize": "1K", "threads": 2})
    assert argv == ["fs_mark", "-d", "1", "-d", "2", "-D", "16", "-N", "4", "-n", "256", "-L", "1", "-S", "0",
                    "-s", "1024"]
