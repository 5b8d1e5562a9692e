"""fio (Debian package fio): file I/O throughput and completion latency.

kbench runs one fio job named after the test (``--rw=<test>``), time based for
``runtime`` seconds (LKP's ``time_based: tb``; with ``time_based`` empty, until each job has
done its size, at most ``runtime``), with ``--group_reporting`` (so several ``numjobs`` are
reported as one) and ``--unlink=1`` (its files are removed afterwards). The file lives in
``directory``, or by default in the run's scratch directory (on the job's file system when it
sets one up: LKP's ``disk`` and ``fs``). LKP's ``test_size`` is the size of all jobs together:
each job's file is ``test_size / numjobs``.

Parsed (stdout, ``--output-format=json``; fio may print ``note:`` lines before the
JSON, which are skipped): from ``jobs[0]``, the ``read`` section for read/randread and
the ``write`` section for write/randwrite — ``iops``, ``bw_bytes`` (reported in MiB/s)
and ``clat_ns`` (``mean`` and the 50/90/99/99.9th ``percentile`` values, in ns); for randrw
(LKP's mixed random reads and writes) the ``iops`` and ``bw_bytes`` of both sections.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kbench.contract.benchmark import TaskCount
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Suite
from kbench.suites.text import SIZE_HINT, SIZE_PATTERN, first_line, size_bytes, size_param, version_in

NAME = "fio"

PARAMS = (
    size_param("bs", "4k", "block size of each I/O (fio --bs)"),
    size_param("size", "64M", "file size per job (fio --size)"),
    SuiteParam(
        "ioengine",
        "str",
        "psync",
        "I/O engine (fio --ioengine), e.g. psync, libaio, io_uring",
        pattern=r"[a-z0-9_]+",
        pattern_hint="an fio engine name such as psync, libaio or io_uring",
    ),
    SuiteParam("iodepth", "int", "1", "I/Os in flight per job (synchronous engines cap it at 1)", 1, 65536),
    SuiteParam("numjobs", "int", "1", "parallel jobs, reported together (fio --numjobs)", 1, 1024),
    SuiteParam("runtime", "int", "10", "seconds of I/O (time based)", 1, 86400),
    SuiteParam("direct", "bool", "0", "1 = O_DIRECT, bypassing the page cache (not on tmpfs)"),
    SuiteParam(
        "directory",
        "str",
        "",
        "absolute path of the directory holding the file; empty = the run's scratch directory",
        pattern=r"(/.*)?",
        pattern_hint="an absolute path (or empty)",
    ),
    SuiteParam("test_size", "str", "", "LKP's test_size: bytes of all jobs together (each job's file is test_size / "
               "numjobs); empty: size per job", pattern=f"({SIZE_PATTERN})?", pattern_hint=f"{SIZE_HINT} (or empty)"),
    SuiteParam("time_based", "str", "tb", "LKP's time_based: tb runs for runtime; empty runs each job's size once "
               "(at most runtime)", choices=("tb", "")),
)

_PERCENTILES = {"clat_p50": 50.0, "clat_p90": 90.0, "clat_p99": 99.0, "clat_p99_9": 99.9}

METRICS = (
    SuiteMetric("iops", "IO/s", HIGHER_IS_BETTER, "I/O operations per second"),
    SuiteMetric("bw", "MiB/s", HIGHER_IS_BETTER, "bandwidth (fio's bw_bytes / 2^20)"),
    SuiteMetric("clat_mean", "ns", LOWER_IS_BETTER, "mean completion latency"),
    *(
        SuiteMetric(stat, "ns", LOWER_IS_BETTER, f"{pct:g}th percentile of completion latency")
        for stat, pct in _PERCENTILES.items()
    ),
)

MIXED_METRICS = tuple(
    SuiteMetric(f"{side}_{stat}", unit, HIGHER_IS_BETTER, f"{side} {what}")
    for side in ("read", "write")
    for stat, unit, what in (("bw", "MiB/s", "bandwidth (fio's bw_bytes / 2^20)"), ("iops", "IO/s", "I/O per second"))
)
"""randrw's metrics (LKP's fio.read_bw_MBps, fio.write_bw_MBps ...): both directions of the mix."""

# test (fio --rw) -> JSON section holding its numbers
_TESTS = {
    "randread": ("read", "random reads"),
    "randwrite": ("write", "random writes"),
    "read": ("read", "sequential reads"),
    "write": ("write", "sequential writes"),
    "randrw": ("read+write", "random reads and writes, half each"),
}


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    size = str(params["size"])
    if params["test_size"]:
        size = str(max(1, size_bytes(str(params["test_size"])) // int(params["numjobs"])))
    argv = [
        "fio",
        f"--name={test.name}",
        f"--rw={test.name}",
        f"--bs={params['bs']}",
        f"--size={size}",
        f"--ioengine={params['ioengine']}",
        f"--iodepth={params['iodepth']}",
        f"--numjobs={params['numjobs']}",
        f"--runtime={params['runtime']}",
        *(["--time_based"] if params["time_based"] else []),
        f"--direct={int(bool(params['direct']))}",
        "--group_reporting",
        "--unlink=1",
        "--output-format=json",
    ]
    if params["directory"]:
        argv.append(f"--directory={params['directory']}")
    return argv


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    """``{fio.<test>.<stat>: value}`` from fio's JSON report (see the module docstring)."""
    job = _single_job(_json_report(output))
    rw = job.get("job options", {}).get("rw")
    if rw is not None and rw != test.name:
        raise SuiteParseError(f"fio report is of an rw={rw} job, not of {test.full_name}")
    if job.get("error", 0):
        raise SuiteParseError(f"fio job {job.get('jobname')!r} reported error {job['error']}")
    if test.name == "randrw":
        return _mixed(test, job)
    direction = _TESTS[test.name][0]
    section = job.get(direction)
    if not isinstance(section, dict) or not section.get("total_ios"):
        raise SuiteParseError(f"fio report has no completed {direction} I/O for {test.full_name}")
    found: dict[str, float] = {}
    for stat, field in (("iops", "iops"), ("bw", "bw_bytes")):
        if field in section:
            found[test.metric_name(stat)] = float(section[field])
    if test.metric_name("bw") in found:
        found[test.metric_name("bw")] /= 2**20
    clat = section.get("clat_ns", {})
    if "mean" in clat:
        found[test.metric_name("clat_mean")] = float(clat["mean"])
    percentiles = {float(key): float(value) for key, value in clat.get("percentile", {}).items()}
    for stat, pct in _PERCENTILES.items():
        for key, value in percentiles.items():
            if abs(key - pct) < 1e-6:
                found[test.metric_name(stat)] = value
    return found


def _mixed(test: SuiteTest, job: dict[str, Any]) -> dict[str, float]:
    found: dict[str, float] = {}
    for side in ("read", "write"):
        section = job.get(side)
        if not isinstance(section, dict) or not section.get("total_ios"):
            raise SuiteParseError(f"fio report has no completed {side} I/O for {test.full_name}")
        found[test.metric_name(f"{side}_bw")] = float(section["bw_bytes"]) / 2**20
        found[test.metric_name(f"{side}_iops")] = float(section["iops"])
    return found


def _json_report(output: str) -> dict[str, Any]:
    match = re.search(r"^\{", output, flags=re.MULTILINE)
    if match is None:
        raise SuiteParseError(f"fio output holds no JSON report: {first_line(output)!r}")
    try:
        report, _ = json.JSONDecoder().raw_decode(output[match.start() :])
    except json.JSONDecodeError as exc:
        raise SuiteParseError(f"fio JSON report does not parse: {exc}") from None
    if not isinstance(report, dict):
        raise SuiteParseError("fio JSON report is not an object")
    return report


def _single_job(report: dict[str, Any]) -> dict[str, Any]:
    jobs = report.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise SuiteParseError("fio JSON report has no jobs")
    if len(jobs) != 1:
        raise SuiteParseError(f"fio JSON report has {len(jobs)} jobs; kbench expects one (--group_reporting)")
    job: dict[str, Any] = jobs[0]
    return job


def version(output: str) -> str:
    """``3.33`` from ``fio-3.33``."""
    return version_in(r"fio-(\S+)", output)


SUITE = Suite(
    name=NAME,
    tool="fio",
    package="fio",
    description="file I/O: IOPS, bandwidth and completion-latency percentiles (fio, JSON output)",
    tests=tuple(
        SuiteTest(NAME, name, f"fio {text} of bs-sized blocks on one file", PARAMS,
                  MIXED_METRICS if name == "randrw" else METRICS)
        for name, (_, text) in _TESTS.items()
    ),
    version_args=("--version",),
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    duration_param="runtime",
    task_count=TaskCount("numjobs"),
)
