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

TCP_SENDFILE (not one of netperf's omni tests: no ``-o``) sends a file of the scratch
directory (``sendfile``, written before the first iteration) with sendfile(); ``-P 0``
leaves its classic report one line of five numbers, the last the throughput in 10^6 bits/s.

LKP's keys: ``ip: ipv4|ipv6`` (netperf and netserver on 127.0.0.1 or ::1), ``send_size``
(bytes per send, ``10K``; netperf -m) and ``nr_threads`` (``instances``: that many netperf
clients at once against the one netserver, run by ``sh``; throughputs are added up, the
request/response latencies of the clients averaged). LKP's SCTP tests are named and refused:
Debian 12's netperf is built without SCTP.
"""

from __future__ import annotations

import csv
import io
import re
import shlex

from kbench.contract.benchmark import TaskCount
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Server, Suite
from kbench.suites.text import SIZE_HINT, SIZE_PATTERN, first_line, size_bytes, version_in

NAME = "netperf"
HOST = "127.0.0.1"
HOSTS = {"ipv4": ("-4", HOST), "ipv6": ("-6", "::1")}
SENDFILE = "sendfile"
SENDFILE_MIN_BYTES = 4 << 20
NO_SCTP = ("Debian 12's netperf 2.7.0 is built without SCTP (it answers 'The test you requested (SCTP_STREAM) is "
           "unknown to this netperf'), and its source package cannot be fetched here to build one with it")

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
    SuiteParam("ip", "str", "ipv4", "LKP's ip: ipv4 (127.0.0.1) or ipv6 (::1)", choices=tuple(HOSTS)),
    SuiteParam("instances", "int", "1", "netperf clients run at once against one netserver (LKP's nr_threads)",
               1, 256),
)
_SEND_SIZE = SuiteParam("send_size", "str", "", "LKP's send_size: bytes per send (netperf -m, e.g. 10K); empty: size",
                        pattern=f"({SIZE_PATTERN})?", pattern_hint=f"{SIZE_HINT} (or empty)")

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
        (SuiteParam("size", "int", "16384", "bytes per send() call (netperf -m)", 1, 1 << 24), _SEND_SIZE),
        _STREAM_METRICS,
    ),
    "TCP_SENDFILE": (
        "TCP", "netperf TCP_SENDFILE: bulk send of a file with sendfile() over a loopback TCP connection",
        (SuiteParam("size", "int", "16384", "bytes per sendfile() call (netperf -m)", 1, 1 << 24), _SEND_SIZE),
        _STREAM_METRICS,
    ),
}
_SCTP = {
    "SCTP_STREAM": "netperf SCTP_STREAM: bulk send over a loopback SCTP association",
    "SCTP_STREAM_MANY": "netperf SCTP_STREAM_MANY: bulk send over a one-to-many SCTP socket",
    "SCTP_RR": "netperf SCTP_RR: request/response transactions over SCTP",
}
_SCTP_METRICS = {"SCTP_RR": _RR_METRICS}


def _send_size(params: dict[str, ParamValue]) -> int:
    return size_bytes(str(params["send_size"])) if params.get("send_size") else int(params["size"])


def _client(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    family, host = HOSTS[str(params["ip"])]
    argv = ["netperf", family, "-H", host, "-p", str(params["port"]), "-t", test.name, "-l", str(params["runtime"])]
    if test.name == "TCP_SENDFILE":
        return [*argv[:1], "-P", "0", *argv[1:], "-F", SENDFILE, "--", "-m", str(_send_size(params))]
    size = params["size"]
    specific = ["-m", str(_send_size(params))] if test.name.endswith("_STREAM") else ["-r", f"{size},{size}"]
    return [*argv, "--", *specific, "-o", ",".join(field for field, _ in _FIELDS)]


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    """One netperf; with ``instances`` > 1, a shell that starts that many at once, waits for each
    and prints their reports one after the other (exit 1 if any failed)."""
    client = _client(test, params)
    count = int(params["instances"])
    if count == 1:
        return client
    script = (f"pids=; for i in $(seq {count}); do {shlex.join(client)} > out.$i 2> err.$i & pids=\"$pids $!\"; "
              "done; rc=0; for p in $pids; do wait $p || rc=1; done; "
              f"for i in $(seq {count}); do cat out.$i; cat err.$i >&2; done; exit $rc")
    return ["sh", "-c", script]


def prepare(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    """TCP_SENDFILE's file: zeros, 64 sends' worth and at least 4 MiB (netperf wants more than its ring)."""
    if test.name != "TCP_SENDFILE":
        return []
    size = max(SENDFILE_MIN_BYTES, 64 * _send_size(params))
    return ["sh", "-c", f"head -c {size} /dev/zero > {SENDFILE}"]


def server(test: SuiteTest, params: dict[str, ParamValue]) -> Server:
    port = int(params["port"])
    family, host = HOSTS[str(params["ip"])]
    return Server(["netserver", "-D", family, "-L", host, "-p", str(port)], port)


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    """``{netperf.<test>.<stat>: value}`` from netperf's reports (one per client): throughputs
    added up, latencies averaged over the clients."""
    if test.name == "TCP_SENDFILE":
        return {test.metric_name("throughput"): sum(_classic_rows(output))}
    rows = _csv_rows(output)
    found = [_parse_row(test, row) for row in rows]
    first = test.metric_name(_TESTS[test.name][3][0].stat)
    return {name: (sum(f[name] for f in found) if name == first else sum(f[name] for f in found) / len(found))
            for name in found[0]}


def _classic_rows(output: str) -> list[float]:
    """The throughput (last of five numbers) of each ``-P 0`` classic stream report line."""
    number = r"[0-9]+(?:\.[0-9]+)?"
    rows = [float(match.group(1)) for line in output.splitlines()
            if (match := re.fullmatch(rf"\s*(?:{number}\s+){{4}}({number})\s*", line))]
    if not rows:
        raise SuiteParseError(f"netperf printed no report line (five numbers): {first_line(output)!r}")
    return rows


def _parse_row(test: SuiteTest, row: dict[str, str]) -> dict[str, float]:
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


def _csv_rows(output: str) -> list[dict[str, str]]:
    lines = output.splitlines()
    rows = []
    for index, line in enumerate(lines):
        if line.startswith("Throughput,"):
            if index + 1 >= len(lines) or not lines[index + 1].strip():
                raise SuiteParseError("netperf printed its CSV header but no values")
            header, values = next(csv.reader(io.StringIO(line))), next(csv.reader(io.StringIO(lines[index + 1])))
            if len(header) != len(values):
                raise SuiteParseError(f"netperf CSV has {len(header)} columns but {len(values)} values")
            rows.append(dict(zip(header, values, strict=True)))
    if not rows:
        raise SuiteParseError(f"netperf output holds no CSV report (no 'Throughput,' header): {first_line(output)!r}")
    return rows


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
    description="loopback network latency and throughput: TCP_RR, UDP_RR, TCP_STREAM, TCP_SENDFILE (netperf + "
                "netserver)",
    tests=(
        *(SuiteTest(NAME, name, text, _COMMON + own, metrics) for name, (_, text, own, metrics) in _TESTS.items()),
        *(SuiteTest(NAME, name, text, (*_COMMON, _SEND_SIZE), _SCTP_METRICS.get(name, _STREAM_METRICS),
                    unavailable=NO_SCTP) for name, text in _SCTP.items()),
    ),
    version_args=("-V",),
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    duration_param="runtime",
    server=server,
    extra_tools=("netserver",),
    task_count=TaskCount("instances"),
    prepare=prepare,
)
