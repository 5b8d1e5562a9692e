"""LKP job files that name a suite's test by its parameters: hackbench's ``mode`` and ``ipc``,
fio's ``rw``, fsmark's ``sync_method``; and the suites whose LKP job names no test at all.

LKP writes ``hackbench: {mode: process|threads, ipc: pipe|socket}``; kbench names the same
thing ``hackbench.pipe-process``. When a job gives the suite and those keys but no
``test``, they become the test axis (their product, in file order of the values) and
are no longer parameters, so the instances and ids are those of ``test: pipe-process``.
A suite in ``DEFAULT_TESTS`` (pigz; fsmark, whose LKP default sync_method is
fsyncBeforeClose) runs that test when the job names none. ``VALUES`` are LKP's spellings of
a parameter's value (fio's ``direct: direct``).
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


SUITE_TESTS = {
    "hackbench": TestFromKeys(("ipc", "mode"), "{ipc}-{mode}"),
    "fio": TestFromKeys(("rw",), "{rw}"),
    "fsmark": TestFromKeys(("sync_method",), "{sync_method}"),
}
DEFAULT_TESTS = {"pigz": "gzip", "fsmark": "fsyncBeforeClose"}
VALUES = {("fio", "direct"): {"direct": "1"}}
"""LKP's value of a parameter → kbench's (LKP's fio-setup-basic writes ``direct: direct`` for O_DIRECT)."""


def _axis_of(spec: JobSpec, key: str) -> Axis | None:
    """The axis ``key`` sets: a setting (``mode``) or a benchmark parameter (``ipc``)."""
    return next((a for a in spec.axes if a.field == key or (a.field == "param" and a.param == key)), None)


def with_lkp_tests(spec: JobSpec, problems: ProblemCollector) -> JobSpec:
    """``spec`` with LKP's test keys turned into its test axis and LKP's values spelled as kbench's
    (unchanged when they do not apply)."""
    spec = _lkp_values(spec)
    rule = SUITE_TESTS.get(spec.suite or "")
    default = DEFAULT_TESTS.get(spec.suite or "")
    if spec.axis("test") is not None or (rule is None and default is None):
        return spec
    if rule is None or not any(_axis_of(spec, key) is not None for key in rule.keys):
        line = spec.suite_line or spec.line
        test = Axis("test", None, "suite", line, (AxisValue(default, line),))
        return dataclasses.replace(spec, axes=(test, *spec.axes)) if default else spec
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


def _lkp_values(spec: JobSpec) -> JobSpec:
    axes = []
    for axis in spec.axes:
        spelled = VALUES.get((spec.suite or "", axis.param or "")) if axis.field == "param" else None
        if spelled:
            axis = dataclasses.replace(axis, values=tuple(
                dataclasses.replace(v, value=spelled.get(str(v.value), v.value)) for v in axis.values))
        axes.append(axis)
    return dataclasses.replace(spec, axes=tuple(axes))
