"""The table of suites kbench offers, and lookup of ``<suite>.<test>`` names."""

from __future__ import annotations

from collections.abc import Mapping

from kbench.contract.suggest import did_you_mean, hint
from kbench.suites import fio, fsmark, hackbench, netperf, perf_bench, pigz, stress_ng, sysbench, unpackaged
from kbench.suites.model import ParamValue, SuiteTest, UnknownSuiteTest
from kbench.suites.suite import Suite

# Add a suite here (one module per tool).
SUITES: tuple[Suite, ...] = (hackbench.SUITE, stress_ng.SUITE, fio.SUITE, sysbench.SUITE, netperf.SUITE,
                            perf_bench.SUITE, fsmark.SUITE, pigz.SUITE, *unpackaged.SUITES)


def get_suite(name: str) -> Suite:
    """The suite called ``name`` (``hackbench``, ``stress-ng``, ``fio``, ``sysbench``, ``netperf``, ``perf-bench``)."""
    for suite in SUITES:
        if suite.name == name:
            return suite
    known = [s.name for s in SUITES]
    raise UnknownSuiteTest(f"unknown suite {name!r}{did_you_mean(name, known)}; suites: {', '.join(known)}")


def lookup_test(full_name: str) -> tuple[Suite, SuiteTest]:
    """The suite and test named ``<suite>.<test>`` (e.g. ``fio.randread``)."""
    suite_name, dot, test_name = full_name.partition(".")
    if not dot:
        same_test = [t.full_name for s in SUITES for t in s.tests if t.name == full_name]
        raise UnknownSuiteTest(
            f"{full_name!r} is not a <suite>.<test> name{hint(same_test)}; `suite_benchmarks()` lists them")
    suite = get_suite(suite_name)
    return suite, suite.test(test_name)


def build_command(full_name: str, params: Mapping[str, ParamValue] | None = None) -> list[str]:
    """The argv of ``<suite>.<test>`` with ``params`` (see Suite.build_command)."""
    suite, test = lookup_test(full_name)
    return suite.build_command(test.name, params)


def parse(full_name: str, output: str) -> dict[str, float]:
    """The metrics of ``<suite>.<test>`` read from ``output`` (see Suite.parse)."""
    suite, test = lookup_test(full_name)
    return suite.parse(test.name, output)
