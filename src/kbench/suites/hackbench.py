"""hackbench (Debian package rt-tests): scheduler and IPC stress by groups of tasks.

Each group has ``fds`` senders and ``fds`` receivers; every sender writes ``loops``
messages of ``datasize`` bytes to every receiver of its group, over a pipe or a
socketpair, with tasks that are processes or threads.

Parsed (stdout): the line ``Time: <seconds>`` (hackbench's wall time for all messages,
millisecond resolution) and, as a check, ``Running in process|threaded mode`` must
agree with the test.
"""

from __future__ import annotations

import re

from kbench.contract.benchmark import TaskCount
from kbench.contract.vocabulary import LOWER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Suite
from kbench.suites.text import find_number, version_in

NAME = "hackbench"

PARAMS = (
    SuiteParam("groups", "int", "10", "groups of senders and receivers (hackbench --groups)", 1, 1000),
    SuiteParam("fds", "int", "20", "senders, and as many receivers, per group (hackbench --fds)", 1, 1000),
    SuiteParam("loops", "int", "100", "messages each sender sends (hackbench --loops)", 1, 10**9),
    SuiteParam("datasize", "int", "100", "bytes per message (hackbench --datasize)", 1, 1 << 20),
)

METRICS = (SuiteMetric("time", "s", LOWER_IS_BETTER, "wall time to pass every message, as hackbench prints it"),)

# test name -> (transport, task kind)
_VARIANTS = {
    "pipe-process": ("pipe", "process"),
    "pipe-thread": ("pipe", "thread"),
    "socket-process": ("socket", "process"),
    "socket-thread": ("socket", "thread"),
}


def _test(name: str) -> SuiteTest:
    transport, tasks = _VARIANTS[name]
    channel = "pipes" if transport == "pipe" else "UNIX socketpairs"
    workers = "processes" if tasks == "process" else "threads"
    description = f"hackbench: groups of {workers} passing messages over {channel}"
    return SuiteTest(NAME, name, description, PARAMS, METRICS)


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    # Short options only, flags last: hackbench 2.4 hands getopt_long its optind as the
    # long-option index (long options corrupt the parse: "--datasize requires an
    # integer > 0") and checks argv[optind] after an option's value.
    transport, tasks = _VARIANTS[test.name]
    argv = [
        "hackbench",
        "-g",
        str(params["groups"]),
        "-f",
        str(params["fds"]),
        "-l",
        str(params["loops"]),
        "-s",
        str(params["datasize"]),
    ]
    if transport == "pipe":
        argv.append("-p")
    argv.append("-T" if tasks == "thread" else "-P")
    return argv


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    """``{hackbench.<test>.time: seconds}`` from hackbench's stdout."""
    mode = re.search(r"^Running in (\w+) mode", output, flags=re.MULTILINE)
    expected = "threaded" if _VARIANTS[test.name][1] == "thread" else "process"
    if mode is not None and mode.group(1) != expected:
        raise SuiteParseError(f"hackbench ran in {mode.group(1)} mode, but {test.full_name} expects {expected} mode")
    seconds = find_number(r"^Time:\s*([0-9]+(?:\.[0-9]+)?)\s*$", output, tool=NAME, what="'Time:' line")
    return {test.metric_name("time"): seconds}


def version(output: str) -> str:
    """``2.40`` from ``hackbench V 2.40`` (the first line of ``hackbench --help``)."""
    return version_in(r"hackbench V\s*(\S+)", output)


SUITE = Suite(
    name=NAME,
    tool="hackbench",
    package="rt-tests",
    description="scheduler/IPC throughput: groups of tasks passing messages (rt-tests' hackbench)",
    tests=tuple(_test(name) for name in _VARIANTS),
    version_args=("--help",),
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    task_count=TaskCount("groups", 2, "fds"),
)
