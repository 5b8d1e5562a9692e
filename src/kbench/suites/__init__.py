"""Standard benchmark suites run through their real tools: hackbench, stress-ng, fio, sysbench, netperf.

Each suite lives in its own module behind one interface (``Suite``): a declaration of
its tests, parameters and metrics, ``build_command`` (validated parameters → argv),
``parse`` (the tool's output → ``{<suite>.<test>.<stat>: value}``, pure) and a version
reader. ``run_suite`` runs a test's tool N times and keeps every raw value and every
byte of output; ``suite_benchmarks`` lists the tests for the catalog.
"""

from kbench.suites.errors import SuiteError, SuiteParseError, ToolFailed, ToolMissing
from kbench.suites.hosts import TCP_TABLES, LocalTools, ToolHost, port_listening
from kbench.suites.listing import MetricSpec, SuiteBenchmark, suite_benchmarks
from kbench.suites.model import BadSuiteParameter, ParamValue, SuiteMetric, SuiteParam, SuiteTest, UnknownSuiteTest
from kbench.suites.process import Finished
from kbench.suites.registry import SUITES, build_command, get_suite, lookup_test, parse
from kbench.suites.result import Iteration, SuiteResult
from kbench.suites.runner import run_suite
from kbench.suites.suite import Server, Suite

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
