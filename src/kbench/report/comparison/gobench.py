"""Export to the Go benchmark text format, so that ``benchstat`` reads kbench results.

One result line per trial and metric: ``<name> <iterations> <value> <unit>``, where value is
the trial's statistic (``SideData.trial_statistics``; the side's central value when no trial
is known) and iterations the trial's sample count (1 when unknown). A header gives the
configuration ``goos``, ``goarch``, ``pkg`` and ``cpu``; ``Unit <unit> better=higher|lower``
lines tell benchstat each metric's direction. Names, units and lines are written by
``report.gobench_format`` (its docstring has the name mangling), as ``kbench export`` writes them.

Files: ``render_side(report, label)`` gives one side's file (``benchstat base.txt new.txt``);
``render(report)`` gives all sides in one stream, each side after its ``kernel: <label>``
configuration line (``kbench-<kind>`` for sides that are not kernels), for ``benchstat -col
kernel all.txt``; ``write_files`` writes one file per side.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kbench.report.comparison.common import flat_items
from kbench.report.comparison.model import HIGHER_IS_BETTER, ComparisonReport, MetricComparison, SideData
from kbench.report.gobench_format import (
    GOARCH,
    benchmark_name,
    config_line,
    header,
    number,
    result_line,
    side_key,
    unit_for,
)

_CPU_KEYS = ("cpu", "cpu_model", "cpu.model", "cpu.name", "model_name", "model name")
_ARCH_KEYS = ("arch", "machine", "architecture", "goarch")
VALUE_DIGITS = 6
"""Significant digits of a trial's statistic."""


def go_unit(m: MetricComparison) -> str:
    """The unit benchstat sees (see ``report.gobench_format``)."""
    return unit_for(m.metric, m.unit)


def _lookup(context: Mapping[str, Any], keys: tuple[str, ...], accept: Callable[[str], bool] = bool) -> str | None:
    """The first context value whose dotted key, or its last part, is one of ``keys`` and that ``accept`` takes."""
    for key, value in flat_items(context):
        if (key in keys or key.rsplit(".", 1)[-1] in keys) and accept(value):
            return value
    return None


def _header(report: ComparisonReport) -> list[str]:
    context = report.context
    units: dict[str, bool] = {}
    for m in report.metrics:
        units.setdefault(go_unit(m), m.direction == HIGHER_IS_BETTER)
    return header(units, arch=_lookup(context, _ARCH_KEYS, lambda value: value in GOARCH),
                  cpu=_lookup(context, _CPU_KEYS))


def _results(m: MetricComparison, side: SideData, central: float) -> list[str]:
    name, unit = benchmark_name(m.metric), go_unit(m)
    values = side.trial_statistics or (central,)
    lines = []
    for i, value in enumerate(values):
        iterations = side.series[i].values.size if i < len(side.series) and side.series[i].values.size else 1
        lines.append(result_line(name, iterations, number(value, VALUE_DIGITS), unit))
    return lines


def _side_lines(report: ComparisonReport, label: str, *, with_key: bool) -> list[str]:
    lines = [config_line(side_key(report.label_kind), label)] if with_key else []
    if label == report.base_label:
        seen: set[str] = set()
        for m in report.metrics:  # the base side of each metric once, even with several new labels
            if m.metric not in seen:
                seen.add(m.metric)
                lines.extend(_results(m, m.base_data, m.base))
    else:
        for m in report.for_label(label):
            lines.extend(_results(m, m.new_data, m.new))
    return lines


def render_side(report: ComparisonReport, label: str) -> str:
    """One side's file: the base label or one of the new labels.

    It carries no label key: benchstat compares files by name, and a key whose value
    differs between files would make it split them into separate tables.
    """
    if label != report.base_label and label not in report.new_labels:
        raise ValueError(f"unknown label {label!r}: expected {report.base_label!r} or one of {report.new_labels}")
    return "\n".join([*_header(report), *_side_lines(report, label, with_key=False)]) + "\n"


def render(report: ComparisonReport) -> str:
    """All sides in one stream; ``benchstat -col kernel`` (or ``-col kbench-<kind>``) compares them."""
    lines = _header(report)
    for label in (report.base_label, *report.new_labels):
        lines.extend(_side_lines(report, label, with_key=True))
    return "\n".join(lines) + "\n"


def _file_stem(label: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", label).strip("._") or "side"


def write_files(report: ComparisonReport, directory: Path) -> list[Path]:
    """Write ``<label>.txt`` per side (base first) into ``directory``; return the paths.

    benchstat names its columns after the files, so the file names are the labels (blanks
    and other unsafe characters become ``_``; a clash gets a ``-<n>`` suffix).
    """
    directory.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    for label in (report.base_label, *report.new_labels):
        stem = _file_stem(label)
        path = directory / f"{stem}.txt"
        n = 2
        while path in paths:
            path = directory / f"{stem}-{n}.txt"
            n += 1
        path.write_text(render_side(report, label))
        paths.append(path)
    return paths
