"""LKP job files that name a suite's test by its parameters: hackbench's ``mode`` and ``ipc``.

LKP writes ``hackbench: {mode: process|threads, ipc: pipe|socket}``; kbench names the same
thing ``hackbench.pipe-process``. When a job gives the suite and those keys but no
``test``, they become the test axis (their product, in file order of the values) and
are no longer parameters, so the instances and ids are those of ``test: pipe-process``.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass

from kbench.jobs.problems import ProblemCollector
from kbench.jobs.schema import Axis, AxisValue, JobSpec


@dataclass(frozen=True)
class TestFromKeys:
    """A suite whose test name is ``pattern`` filled with the values of ``keys``."""

    keys: tuple[str, ...]
    pattern: str


SUITE_TESTS = {"hackbench": TestFromKeys(("ipc", "mode"), "{ipc}-{mode}")}


def _axis_of(spec: JobSpec, key: str) -> Axis | None:
    """The axis ``key`` sets: a setting (``mode``) or a benchmark parameter (``ipc``)."""
    return next((a for a in spec.axes if a.field == key or (a.field == "param" and a.param == key)), None)


def with_lkp_tests(spec: JobSpec, problems: ProblemCollector) -> JobSpec:
    """``spec`` with LKP's test keys turned into its test axis (unchanged when they do not apply)."""
    rule = SUITE_TESTS.get(spec.suite or "")
    if rule is None or spec.axis("test") is not None:
        return spec
    found = {key: _axis_of(spec, key) for key in rule.keys}
    given = [axis for axis in found.values() if axis is not None]
    if not given:
        return spec
    missing = [key for key, axis in found.items() if axis is None]
    if missing:
        first = given[0]
        problems.add(first.line, first.label, f"LKP's {' and '.join(rule.keys)} name the {spec.suite} test together: "
                                              f"give {' and '.join(missing)} too, or name the test (test: "
                                              f"{rule.pattern.format(ipc='pipe', mode='process')})")
        return spec
    axes = [found[key] for key in rule.keys]
    names = []
    for point in itertools.product(*(axis.values for axis in axes if axis is not None)):
        values = {key: str(value.value) for key, value in zip(rule.keys, point, strict=True)}
        names.append(AxisValue(rule.pattern.format(**values), min(value.line for value in point)))
    line = min(axis.line for axis in axes if axis is not None)
    label = "+".join(axis.label for axis in axes if axis is not None)
    test = Axis("test", None, label, line, tuple(names))
    kept = tuple(axis for axis in spec.axes if all(axis is not used for used in axes))
    return dataclasses.replace(spec, axes=(test, *kept))
