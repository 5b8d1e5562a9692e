"""netperf (Debian package netperf, in the non-free component): network latency and
throughput over the loopback interface, as LKP's netperf jobs measure them.

kbench starts ``netserver`` in the foreground on 127.0.0.1 (``port``) before the first
iteration and stops it after the last; each iteration is one ``netperf -t <test> -l
<runtime>`` against it, with omni output selectors (``-o``) so the report is one CSV
header line and one CSV value line.

Parsed (stdout): the line after the ``Throughput,...`` header. Request/response tests
(TCP_RR, UDP_RR): ``Throughput`` in ``Trans/s`` and the mean, 50th, 90th and 99th
percentile latency in microseconds. TCP_STREAM: ``Throughput`` in ``10^6bits/s``
(reported as Mbit/s). The protocol and the throughput unit must agree with the test.
"""

from __future__ import annotations

import csv
import io

from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Server, Suite
from kbench.suites.text import first_line, version_in

NAME = "netperf"
HOST = "127.0.0.1"

_FIELDS = (
    ("THROUGHPUT", "Throughput"),
    ("THROUGHPUT_UNITS", "Throughput Units"),
    ("MEAN_LATENCY", "Mean Latency Microseconds"),
    ("P50_LATENCY", "50th Percentile Latency Microseconds"),
    ("P90_LATENCY", "90th Percentile Latency Microseconds"),
    ("P99_LATENCY", "99th Percentile Latency Microseconds"),
    ("ELAPSED_TIME", "Elapsed Time (sec)"),
    ("PROTOCOL", "Protocol"),
)

_COMMON = (
    SuiteParam("runtime", "int", "10", "seconds each netperf run lasts (netperf -l)", 1, 86400),
    SuiteParam(
        "port", "int", "12867",
        "netserver's control port on 127.0.0.1 (not netperf's default 12865, which a system netserver may hold)",
        1024, 65535,
    ),
)

_RR_METRICS = (
    SuiteMetric("transactions_per_s", "trans/s", HIGHER_IS_BETTER, "request/response transactions per second"),
    SuiteMetric("latency_mean", "us", LOWER_IS_BETTER, "mean round-trip latency of one transaction"),
    SuiteMetric("latency_p50", "us", LOWER_IS_BETTER, "median round-trip latency"),
    SuiteMetric("latency_p90", "us", LOWER_IS_BETTER, "90th percentile of round-trip latency"),
    SuiteMetric("latency_p99", "us", LOWER_IS_BETTER, "99th percentile of round-trip latency"),
)
_STREAM_METRICS = (SuiteMetric("throughput", "Mbit/s", HIGHER_IS_BETTER, "bulk data throughput (10^6 bits/s)"),)

# test -> (protocol, description, its own parameters, metrics)
_TESTS: dict[str, tuple[str, str, tuple[SuiteParam, ...], tuple[SuiteMetric, ...]]] = {
    "TCP_RR": (
        "TCP", "netperf TCP_RR: one byte-sized request and response at a time over a loopback TCP connection",
        (SuiteParam("size", "int", "1", "bytes per request and per response (netperf -r)", 1, 1 << 20),),
        _RR_METRICS,
    ),
    "UDP_RR": (
        "UDP", "netperf UDP_RR: request/response transactions over loopback UDP",
        (SuiteParam("size", "int", "1", "bytes per request and per response (netperf -r)", 1, 65507),),
        _RR_METRICS,
    ),
    "TCP_STREAM": (
        "TCP", "netperf TCP_STREAM: bulk send over a loopback TCP connection",
        (SuiteParam("size", "int", "16384", "bytes per send() call (netperf -m)", 1, 1 << 24),),
        _STREAM_METRICS,
    ),
}


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    size = params["size"]
    specific = ["-m", str(size)] if test.name.endswith("_STREAM") else ["-r", f"{size},{size}"]
    return [
        "netperf", "-4", "-H", HOST, "-p", str(params["port"]), "-t", test.name, "-l", str(params["runtime"]),
        "--", *specific, "-o", ",".join(field for field, _ in _FIELDS),
    ]


def server(test: SuiteTest, params: dict[str, ParamValue]) -> Server:
    port = int(params["port"])
    return Server(["netserver", "-D", "-4", "-L", HOST, "-p", str(port)], port)


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    """``{netperf.<test>.<stat>: value}`` from netperf's omni CSV output."""
    row = _csv_row(output)
    protocol, _, _, metrics = _TESTS[test.name]
    if row.get("Protocol", protocol) != protocol:
        raise SuiteParseError(f"netperf report is of a {row['Protocol']} test, not of {test.full_name}")
    units = row.get("Throughput Units", "")
    expected_units = "10^6bits/s" if metrics is _STREAM_METRICS else "Trans/s"
    if units != expected_units:
        raise SuiteParseError(f"netperf reports throughput in {units!r}, {test.full_name} expects {expected_units}")
    found = {test.metric_name(metrics[0].stat): _number(row, "Throughput")}
    if metrics is _RR_METRICS:
        for stat, column in (
            ("latency_mean", "Mean Latency Microseconds"),
            ("latency_p50", "50th Percentile Latency Microseconds"),
            ("latency_p90", "90th Percentile Latency Microseconds"),
            ("latency_p99", "99th Percentile Latency Microseconds"),
        ):
            found[test.metric_name(stat)] = _number(row, column)
    return found


def _csv_row(output: str) -> dict[str, str]:
    lines = output.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("Throughput,"):
            if index + 1 >= len(lines) or not lines[index + 1].strip():
                raise SuiteParseError("netperf printed its CSV header but no values")
            header, values = next(csv.reader(io.StringIO(line))), next(csv.reader(io.StringIO(lines[index + 1])))
            if len(header) != len(values):
                raise SuiteParseError(f"netperf CSV has {len(header)} columns but {len(values)} values")
            return dict(zip(header, values, strict=True))
    raise SuiteParseError(f"netperf output holds no CSV report (no 'Throughput,' header): {first_line(output)!r}")


def _number(row: dict[str, str], column: str) -> float:
    text = row.get(column)
    if text is None:
        raise SuiteParseError(f"netperf report has no {column!r} column")
    try:
        value = float(text)
    except ValueError:
        raise SuiteParseError(f"netperf {column!r} is {text!r}, not a number") from None
    if value < 0:  # netperf prints -1 for a statistic it did not collect
        raise SuiteParseError(f"netperf did not measure {column!r} (it printed {text})")
    return value


def version(output: str) -> str:
    """``2.7.0`` from ``Netperf version 2.7.0``."""
    return version_in(r"Netperf version\s+([0-9]\S*)", output)


SUITE = Suite(
    name=NAME,
    tool="netperf",
    package="netperf",
    description="loopback network latency and throughput: TCP_RR, UDP_RR, TCP_STREAM (netperf + netserver)",
    tests=tuple(
        SuiteTest(NAME, name, text, _COMMON + own, metrics) for name, (_, text, own, metrics) in _TESTS.items()
    ),
    version_args=("-V",),
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    duration_param="runtime",
    server=server,
    extra_tools=("netserver",),
)
