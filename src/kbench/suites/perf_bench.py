"""perf bench (Debian package linux-perf): LKP's perf-bench-sched-pipe and perf-bench-futex.

- ``sched-pipe``: two tasks (processes, or threads with ``threads=1``) pass a token back
  and forth over a pair of pipes ``loops`` times: pipe wake-up latency, the path 0-Day
  reports scheduler regressions on.
- ``futex-hash``: ``threads`` threads lock and unlock ``futexes`` private (or shared)
  futexes each for ``runtime`` seconds: futex hash-table throughput.

Parsed (stdout). sched-pipe: ``Executed <loops> pipe operations between two
processes|threads`` (checked against the test's parameters), ``Total time: <s> [sec]``,
``<x> usecs/op`` and ``<n> ops/sec``. futex-hash: ``Averaged <n> operations/sec (+- <p>%),
total secs = <t>``.
"""

from __future__ import annotations

import re

from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Suite
from kbench.suites.text import find_number, first_line, version_in

NAME = "perf-bench"
_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"

_PIPE_PARAMS = (
    SuiteParam("loops", "int", "100000", "round trips of the token (perf bench sched pipe -l)", 1, 10**9),
    SuiteParam("threads", "bool", "0", "1 = two threads of one process instead of two processes (-T)"),
)
_FUTEX_PARAMS = (
    SuiteParam("runtime", "int", "5", "seconds (perf bench futex hash -r)", 1, 86400),
    SuiteParam("threads", "int", "2", "threads hammering the futexes (-t)", 1, 4096),
    SuiteParam("futexes", "int", "1024", "futexes per thread (-f)", 1, 10**7),
    SuiteParam("shared", "bool", "0", "1 = process-shared futexes instead of private ones (-S)"),
)

_PIPE_METRICS = (
    SuiteMetric("usecs_per_op", "us", LOWER_IS_BETTER, "one pipe round trip, as perf prints it"),
    SuiteMetric("ops_per_s", "ops/s", HIGHER_IS_BETTER, "round trips per second"),
    SuiteMetric("total_time", "s", LOWER_IS_BETTER, "wall time of all the round trips"),
)
_FUTEX_METRICS = (
    SuiteMetric("ops_per_s", "ops/s", HIGHER_IS_BETTER, "futex lock+unlock operations per second, averaged over "
                "the threads"),
)


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    if test.name == "sched-pipe":
        argv = ["perf", "bench", "sched", "pipe", "-l", str(params["loops"])]
        return argv + (["-T"] if params["threads"] else [])
    argv = ["perf", "bench", "futex", "hash", "-r", str(params["runtime"]), "-t", str(params["threads"]),
            "-f", str(params["futexes"]), "-s"]
    return argv + (["-S"] if params["shared"] else [])


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    """``{perf-bench.<test>.<stat>: value}`` from perf bench's report (see the module docstring)."""
    if test.name == "sched-pipe":
        if "sched/pipe" not in output and "pipe operations" not in output:
            raise SuiteParseError(f"perf bench output is not a sched pipe report: {first_line(output)!r}")
        return {
            test.metric_name("usecs_per_op"): _number(r"^\s*" + _NUMBER + r" usecs/op\s*$", output, "usecs/op"),
            test.metric_name("ops_per_s"): _number(r"^\s*" + _NUMBER + r" ops/sec\s*$", output, "ops/sec"),
            test.metric_name("total_time"): _number(r"Total time:\s*" + _NUMBER + r" \[sec\]", output, "Total time"),
        }
    if "sched/pipe" in output:
        raise SuiteParseError(f"perf bench report is of sched pipe, not of {test.full_name}")
    rate = _number(r"^Averaged " + _NUMBER + r" operations/sec", output, "'Averaged … operations/sec' line")
    return {test.metric_name("ops_per_s"): rate}


def executed(output: str) -> tuple[int, str] | None:
    """(loops, "processes" or "threads") from sched pipe's ``Executed …`` line, if present."""
    match = re.search(r"Executed (\d+) pipe operations between two (processes|threads)", output)
    return (int(match.group(1)), match.group(2)) if match else None


def _number(pattern: str, output: str, what: str) -> float:
    return find_number(pattern, output, tool="perf bench", what=what)


def version(output: str) -> str:
    """``6.1.192`` from ``perf version 6.1.192``."""
    return version_in(r"\bperf version\s+([0-9]\S*)", output)


SUITE = Suite(
    name=NAME,
    tool="perf",
    package="linux-perf",
    description="perf bench, as LKP runs it: sched pipe (pipe wake-up round trips) and futex hash",
    tests=(
        SuiteTest(NAME, "sched-pipe", "perf bench sched pipe: two tasks pass a token over pipes", _PIPE_PARAMS,
                  _PIPE_METRICS),
        SuiteTest(NAME, "futex-hash", "perf bench futex hash: threads lock and unlock private futexes",
                  _FUTEX_PARAMS, _FUTEX_METRICS),
    ),
    version_args=("--version",),
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    duration_param="runtime",
)
