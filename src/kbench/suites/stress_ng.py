"""stress-ng (Debian package stress-ng): one stressor per test, bogo operations per second.

kbench runs ``stress-ng --<stressor> <workers> --timeout <n>s --metrics-brief --yaml
/dev/stdout``: the YAML report goes to stdout, the human-readable log (with the
``--metrics-brief`` table) to stderr.

Parsed: the ``metrics:`` list of the YAML report, per stressor ``bogo-ops``,
``bogo-ops-per-second-real-time`` and ``bogo-ops-per-second-usr-sys-time``. Text that
holds no YAML report is read as the ``--metrics-brief`` table instead (lines
``stress-ng: metrc: [pid] <stressor> <bogo ops> <real s> <usr s> <sys s> <ops/s real>
<ops/s usr+sys>``; stress-ng before 0.14 tagged them ``info:``), which gives the same
values rounded to two decimals. Every stressor found is returned, named
``stress-ng.<stressor>.<stat>``; the extra per-stressor metrics stress-ng prints
(e.g. nanoseconds per context switch) are not read.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from kbench.contract.benchmark import TaskCount
from kbench.contract.vocabulary import HIGHER_IS_BETTER
from kbench.suites.errors import SuiteParseError
from kbench.suites.model import ParamValue, SuiteMetric, SuiteParam, SuiteTest
from kbench.suites.suite import Suite
from kbench.suites.text import version_in

NAME = "stress-ng"

PARAMS = (
    SuiteParam("workers", "int", "1", "stressor instances; 0 = one per online CPU (stress-ng --<stressor> N)", 0, 4096),
    SuiteParam("timeout", "int", "10", "seconds each run lasts (stress-ng --timeout)", 1, 86400),
)

METRICS = (
    SuiteMetric("bogo_ops_per_s", "ops/s", HIGHER_IS_BETTER, "bogo operations per second of wall-clock time"),
    SuiteMetric("bogo_ops_per_s_usr_sys", "ops/s", HIGHER_IS_BETTER, "bogo operations per second of user+system CPU"),
    SuiteMetric("bogo_ops", "ops", HIGHER_IS_BETTER, "bogo operations completed by all workers in the run"),
)

# One line per stressor kbench offers; add a stressor here to offer it.
STRESSORS = {
    "cpu": "CPU-bound compute methods (all of them, in turn)",
    "switch": "context switches between two processes over a pipe",
    "pipe": "large writes and reads through a pipe between two processes",
    "futex": "futex wait/wake between processes",
    "fork": "fork() of children that exit at once, and their reaping",
    "mmap": "mmap/munmap of regions, touching their pages",
    "vm": "anonymous memory writes and checks (page faults, memory bandwidth)",
    "sem": "POSIX semaphore wait/post",
    "msg": "System V message queue send/receive",
    "sock": "TCP send/receive over loopback",
    "get": "system calls that return system or process information",
}

# YAML key -> stat
_YAML_STATS = {
    "bogo-ops-per-second-real-time": "bogo_ops_per_s",
    "bogo-ops-per-second-usr-sys-time": "bogo_ops_per_s_usr_sys",
    "bogo-ops": "bogo_ops",
}

_NUMBER = r"([0-9]+(?:\.[0-9]+)?)"
_BRIEF_LINE = re.compile(
    r"^stress-ng: (?:metrc|info):\s+\[\d+\]\s+([A-Za-z0-9_-]+)\s+([0-9]+)" + rf"\s+{_NUMBER}" * 5 + r"\s*$",
    flags=re.MULTILINE,
)


def command(test: SuiteTest, params: dict[str, ParamValue]) -> list[str]:
    return [
        "stress-ng",
        f"--{test.name}",
        str(params["workers"]),
        "--timeout",
        f"{params['timeout']}s",
        "--metrics-brief",
        "--yaml",
        "/dev/stdout",
    ]


def parse(test: SuiteTest, output: str) -> dict[str, float]:
    """Metrics of every stressor in ``output`` (see the module docstring)."""
    return parse_all(output)


def parse_all(output: str) -> dict[str, float]:
    """``{stress-ng.<stressor>.<stat>: value}`` for every stressor the output reports."""
    has_yaml = re.search(r"^metrics:", output, flags=re.MULTILINE) is not None
    found = _parse_yaml(output) if has_yaml else _parse_brief(output)
    if not found:
        raise SuiteParseError("stress-ng output reports no stressor metrics (did any stressor run?)")
    return found


def _parse_yaml(output: str) -> dict[str, float]:
    start = output.find("---")
    try:
        document: Any = yaml.safe_load(output[max(start, 0) :])
    except yaml.YAMLError as exc:
        raise SuiteParseError(f"stress-ng YAML report does not parse: {exc}") from None
    entries = document.get("metrics") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise SuiteParseError("stress-ng YAML report has no 'metrics' list")
    found: dict[str, float] = {}
    for entry in entries:
        if not isinstance(entry, dict) or "stressor" not in entry:
            raise SuiteParseError(f"stress-ng YAML metrics entry without a stressor: {entry!r}")
        for key, stat in _YAML_STATS.items():
            if key not in entry:
                raise SuiteParseError(f"stress-ng YAML metrics for {entry['stressor']} lack {key}")
            found[f"{NAME}.{entry['stressor']}.{stat}"] = float(entry[key])
    return found


def _parse_brief(output: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for match in _BRIEF_LINE.finditer(output):
        stressor = match.group(1)
        found[f"{NAME}.{stressor}.bogo_ops"] = float(match.group(2))
        found[f"{NAME}.{stressor}.bogo_ops_per_s"] = float(match.group(6))
        found[f"{NAME}.{stressor}.bogo_ops_per_s_usr_sys"] = float(match.group(7))
    return found


def version(output: str) -> str:
    """``0.15.06`` from ``stress-ng, version 0.15.06 (gcc …)``."""
    return version_in(r"version\s+([0-9][\w.~+-]*)", output)


SUITE = Suite(
    name=NAME,
    tool="stress-ng",
    package="stress-ng",
    description="kernel subsystem stressors measured in bogo operations per second",
    tests=tuple(
        SuiteTest(NAME, stressor, f"stress-ng --{stressor}: {text}", PARAMS, METRICS)
        for stressor, text in STRESSORS.items()
    ),
    version_args=("--version",),
    parse_stream="stdout",
    command=command,
    parse_output=parse,
    version=version,
    duration_param="timeout",
    task_count=TaskCount("workers"),
)
