"""Standard benchmark suites run through their real tools: hackbench, stress-ng, fio, sysbench, netperf.

Each suite lives in its own module behind one interface (``Suite``): a declaration of
its tests, parameters and metrics, ``build_command`` (validated parameters → argv),
``parse`` (the tool's output → ``{<suite>.<test>.<stat>: value}``, pure) and a version
reader. ``run_suite`` runs a test's tool N times and keeps every raw value and every
byte of output; ``suite_benchmarks`` lists the tests for the catalog.

The names below are imported when first used (``kbench show`` and ``kbench list`` need
only ``listing``, not the tools' drivers).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbench.suites.errors import SuiteError, SuiteParseError, ToolFailed, ToolMissing
    from kbench.suites.hosts import TCP_TABLES, LocalTools, ToolHost, port_listening
    from kbench.suites.listing import MetricSpec, SuiteBenchmark, suite_benchmarks
    from kbench.suites.model import BadSuiteParameter, ParamValue, SuiteMetric, SuiteParam, SuiteTest, UnknownSuiteTest
    from kbench.suites.process import Finished
    from kbench.suites.registry import SUITES, build_command, get_suite, lookup_test, parse
    from kbench.suites.result import Iteration, SuiteResult
    from kbench.suites.runner import run_suite
    from kbench.suites.suite import Server, Suite

_HOMES = {
    "BadSuiteParameter": "kbench.suites.model",
    "Finished": "kbench.suites.process",
    "Iteration": "kbench.suites.result",
    "LocalTools": "kbench.suites.hosts",
    "MetricSpec": "kbench.suites.listing",
    "ParamValue": "kbench.suites.model",
    "SUITES": "kbench.suites.registry",
    "Server": "kbench.suites.suite",
    "Suite": "kbench.suites.suite",
    "SuiteBenchmark": "kbench.suites.listing",
    "SuiteError": "kbench.suites.errors",
    "SuiteMetric": "kbench.suites.model",
    "SuiteParam": "kbench.suites.model",
    "SuiteParseError": "kbench.suites.errors",
    "SuiteResult": "kbench.suites.result",
    "SuiteTest": "kbench.suites.model",
    "TCP_TABLES": "kbench.suites.hosts",
    "ToolFailed": "kbench.suites.errors",
    "ToolHost": "kbench.suites.hosts",
    "ToolMissing": "kbench.suites.errors",
    "UnknownSuiteTest": "kbench.suites.model",
    "build_command": "kbench.suites.registry",
    "get_suite": "kbench.suites.registry",
    "lookup_test": "kbench.suites.registry",
    "parse": "kbench.suites.registry",
    "port_listening": "kbench.suites.hosts",
    "run_suite": "kbench.suites.runner",
    "suite_benchmarks": "kbench.suites.listing",
}

__all__ = [
    "SUITES",
    "TCP_TABLES",
    "BadSuiteParameter",
    "Finished",
    "Iteration",
    "LocalTools",
    "MetricSpec",
    "ParamValue",
    "Server",
    "Suite",
    "SuiteBenchmark",
    "SuiteError",
    "SuiteMetric",
    "SuiteParam",
    "SuiteParseError",
    "SuiteResult",
    "SuiteTest",
    "ToolFailed",
    "ToolHost",
    "ToolMissing",
    "UnknownSuiteTest",
    "build_command",
    "get_suite",
    "lookup_test",
    "parse",
    "port_listening",
    "run_suite",
    "suite_benchmarks",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
