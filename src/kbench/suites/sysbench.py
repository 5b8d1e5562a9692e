"""sysbench (Debian package sysbench): CPU, memory and thread-scheduling tests.

Parsed (stdout, sysbench's text report):
- every test: ``total time: <s>s`` and ``total number of events: <n>`` under "General
  statistics"; ``avg``, ``max`` and ``95th percentile`` under "Latency (ms)" (sysbench
  prints them with 0.01 ms resolution).
- cpu: ``events per second: <x>`` (sysbench's own rate).
- memory: ``Total operations: <n> (<x> per second)`` and ``<n> MiB transferred (<x>
  MiB/sec)``.
- threads: sysbench prints no rate; events_per_s is total number of events ÷ total time.
The test is checked against the report (cpu prints "Prime numbers limit", memory
"Running memory speed test"; threads prints neither).
"""

from __future__ import annotations

from kbench.contract.benchmark import TaskCount
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Suite
from kbench.suites.text import find_number, size_param, version_in

NAME = "sysbench"
_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"

_COMMON = (
    SuiteParam("threads", "int", "1", "worker threads (sysbench --threads)", 1, 4096),
    SuiteParam("time", "int", "10", "seconds each run lasts (sysbench --time)", 1, 86400),
)

_LATENCY = (
    SuiteMetric("latency_avg", "ms", LOWER_IS_BETTER, "mean latency of one event"),
    SuiteMetric("latency_p95", "ms", LOWER_IS_BETTER, "95th percentile of event latency"),
    SuiteMetric("latency_max", "ms", LOWER_IS_BETTER, "longest event"),
)

_EVENTS_PER_S = SuiteMetric("events_per_s", "events/s", HIGHER_IS_BETTER, "events completed per second")

# kbench parameter -> sysbench option, for the parameters specific to one test
_OPTIONS = {
    "cpu_max_prime": "cpu-max-prime",
    "block_size": "memory-block-size",
    "total_size": "memory-total-size",
    "oper": "memory-oper",
    "access_mode": "memory-access-mode",
    "yields": "thread-yields",
    "locks": "thread-locks",
}

# test -> (description, its own parameters, its metrics)
_TESTS: dict[str, tuple[str, tuple[SuiteParam, ...], tuple[SuiteMetric, ...]]] = {
    "cpu": (
        "sysbench cpu: each event checks the numbers up to cpu_max_prime for primality",
        (SuiteParam("cpu_max_prime", "int", "10000", "upper limit of the prime search", 3, 10**9),),
        (_EVENTS_PER_S, *_LATENCY),
    ),
    "memory": (
        "sysbench memory: each event reads or writes one block of a buffer",
        (
            size_param("block_size", "1K", "bytes per event"),
            size_param("total_size", "100G", "stop after this much"),
            SuiteParam("oper", "str", "write", "read, write or none", choices=("read", "write", "none")),
            SuiteParam("access_mode", "str", "seq", "seq(uential) or rnd (random)", choices=("seq", "rnd")),
        ),
        (
            SuiteMetric("mib_per_s", "MiB/s", HIGHER_IS_BETTER, "memory transferred per second"),
            SuiteMetric("ops_per_s", "ops/s", HIGHER_IS_BETTER, "block operations per second"),
        ),
    ),
    "threads": (
        "sysbench threads: threads competing for mutexes, yielding the CPU in between",
        (
            SuiteParam("yields", "int", "1000", "sched_yield() calls per lock/unlock", 0, 10**9),
            SuiteParam("locks", "int", "8", "mutexes shared by the threads", 1, 10**6),
        ),
        (_EVENTS_PER_S, *_LATENCY),
    ),
}

_MARKERS = {"cpu": "Prime numbers limit", "memory": "Running memory speed test"}


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    argv = ["sysbench", test.name, f"--threads={params['threads']}", f"--time={params['time']}"]
    for spec in _TESTS[test.name][1]:
        argv.append(f"--{_OPTIONS[spec.name]}={params[spec.name]}")
    argv.append("run")
    return argv


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    """``{sysbench.<test>.<stat>: value}`` from sysbench's report (see the module docstring)."""
    _check_test(test, output)
    total_time = _number(r"^\s*total time:\s*" + _NUMBER + r"s\s*$", output, "total time")
    events = _number(r"^\s*total number of events:\s*" + _NUMBER + r"\s*$", output, "total number of events")
    if test.name == "memory":
        return {
            test.metric_name("mib_per_s"): _number(r"MiB transferred \(" + _NUMBER + r" MiB/sec\)", output, "MiB/sec"),
            test.metric_name("ops_per_s"): _number(
                r"^Total operations:\s*[0-9]+ \(" + _NUMBER + r" per second\)", output, "operations per second"
            ),
        }
    if test.name == "cpu":
        rate = _number(r"^\s*events per second:\s*" + _NUMBER + r"\s*$", output, "events per second")
    else:
        if total_time <= 0:
            raise SuiteParseError("sysbench reports a total time of 0 s")
        rate = events / total_time
    return {
        test.metric_name("events_per_s"): rate,
        test.metric_name("latency_avg"): _latency("avg", output),
        test.metric_name("latency_p95"): _latency("95th percentile", output),
        test.metric_name("latency_max"): _latency("max", output),
    }


def _check_test(test: SuiteTest, output: str) -> None:
    for name, marker in _MARKERS.items():
        if (marker in output) != (name == test.name):
            shown = next((other for other, m in _MARKERS.items() if m in output), "threads")
            raise SuiteParseError(f"sysbench report is of its {shown} test, not of {test.full_name}")


def _latency(label: str, output: str) -> float:
    """A value of the "Latency (ms)" block, whose lines read ``<label>: <ms>``."""
    return _number(r"^\s*" + label + r":\s*" + _NUMBER + r"\s*$", output, f"latency {label}")


def _number(pattern: str, output: str, what: str) -> float:
    return find_number(pattern, output, tool=NAME, what=what)


def version(output: str) -> str:
    """``1.0.20`` from ``sysbench 1.0.20``."""
    return version_in(r"sysbench\s+([0-9]\S*)", output)


SUITE = Suite(
    name=NAME,
    tool="sysbench",
    package="sysbench",
    description="sysbench's CPU, memory-bandwidth and thread/mutex scheduling tests",
    tests=tuple(SuiteTest(NAME, name, text, _COMMON + own, metrics) for name, (text, own, metrics) in _TESTS.items()),
    version_args=("--version",),
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    duration_param="time",
    task_count=TaskCount("threads"),
)
