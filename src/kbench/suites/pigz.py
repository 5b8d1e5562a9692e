"""pigz (Debian package pigz): parallel gzip compression throughput, as LKP's pigz test measures it.

Before the first iteration the run's scratch directory gets ``input``: ``size`` bytes of random
data written as base64 text (LKP compresses base64 of random bytes: text, compressible about
4:3). One iteration is ``pigz -c -b BLOCKSIZE -p THREADS < input > /dev/null`` under ``sh``,
which first prints the input's byte count (``wc -c``). pigz prints no rate of its own: the
throughput is that byte count over the iteration's wall-clock time (the child's start to its
exit, measured where it ran).
"""

from __future__ import annotations

import re

from kbench.contract.benchmark import TaskCount
from kbench.contract.vocabulary import HIGHER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Suite
from kbench.suites.text import first_line, size_bytes, size_param, version_in

NAME = "pigz"
INPUT = "input"

PARAMS = (
    SuiteParam("blocksize", "int", "128", "KiB compressed per thread at a time (LKP's blocksize; pigz -b)",
               32, 1 << 20),
    SuiteParam("threads", "int", "1", "compression threads (LKP's nr_threads; pigz -p)", 1, 1024),
    size_param("size", "16M", "bytes of base64 text compressed by one iteration"),
)
METRICS = (SuiteMetric("throughput", "MiB/s", HIGHER_IS_BETTER, "input MiB compressed per second of wall-clock time"),)


def prepare(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    """``input``: base64 text of random bytes, ``size`` bytes long (rounded down to whole lines)."""
    raw = size_bytes(str(params["size"])) * 3 // 4
    return ["sh", "-c", f"head -c {raw} /dev/urandom | base64 > {INPUT}"]


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    pigz = f"pigz -c -b {int(params['blocksize'])} -p {int(params['threads'])}"
    return ["sh", "-c", f"wc -c < {INPUT} && {pigz} < {INPUT} > /dev/null"]


def parse_timed(test: SuiteTest, output: str, wall_seconds: float) -> dict[str, float]:
    """Input bytes (the first line, ``wc -c``) over ``wall_seconds``, in MiB/s."""
    match = re.match(r"\s*([0-9]+)\s*$", first_line(output))
    if match is None:
        raise SuiteParseError(f"pigz run printed no input size first: {first_line(output)!r}")
    size = int(match.group(1))
    if size <= 0 or wall_seconds <= 0:
        raise SuiteParseError(f"pigz compressed {size} bytes in {wall_seconds:g} s: no throughput")
    return {test.metric_name("throughput"): size / wall_seconds / 2**20}


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    raise SuiteParseError("pigz's throughput needs the iteration's time (parse_timed)")


def version(output: str) -> str:
    """``2.6`` from ``pigz 2.6``."""
    return version_in(r"pigz\s+([0-9]\S*)", output)


SUITE = Suite(
    name=NAME,
    tool="pigz",
    package="pigz",
    description="parallel gzip compression of base64 text (pigz), LKP's pigz",
    tests=(SuiteTest(NAME, "gzip", "pigz -c: compress base64 text of random bytes with N threads", PARAMS, METRICS),),
    version_args=("--version",),
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    task_count=TaskCount("threads"),
    prepare=prepare,
    parse_timed=parse_timed,
)
