"""Export to the Go benchmark text format, so that ``benchstat`` reads kbench results.

One result line per trial and metric: ``<name> <iterations> <value> <unit>``, where value is
the trial's statistic (``SideData.trial_statistics``; the side's central value when no trial
is known) and iterations the trial's sample count (1 when unknown). A header gives the
configuration ``goos``, ``goarch``, ``pkg`` and ``cpu``; ``Unit <unit> better=higher|lower``
lines tell benchstat each metric's direction.

Name mangling of a metric ``<suite>.<test>.<stat>``:

- benchmark name: ``Benchmark`` + each component but the last in CamelCase, where every
  run of characters other than ASCII letters and digits separates words:
  ``syscall.getppid.latency`` → ``BenchmarkSyscallGetppid``,
  ``will-it-scale.mmap1.per_process_ops`` → ``BenchmarkWillItScaleMmap1``.
  A name that would end in ``-<digits>`` gets ``_`` appended so that benchstat does not
  read the digits as GOMAXPROCS.
- unit: ``ns`` becomes ``ns/op`` (benchstat shows it as ``sec/op``), any other unit keeps
  its spelling with blanks removed; when the stat is not ``latency`` and differs from the
  unit it is prefixed: ``per_process_ops-ops``. So two metrics never share a (name, unit).

Files: ``render_side(report, label)`` gives one side's file (``benchstat base.txt new.txt``);
``render(report)`` gives all sides in one stream, each side after its ``kernel: <label>``
configuration line, for ``benchstat -col kernel all.txt``; ``write_files`` writes one file
per side.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kbench.report.comparison.common import flat_items
from kbench.report.comparison.model import HIGHER_IS_BETTER, ComparisonReport, MetricComparison, SideData

_GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386",
           "i386": "386", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
_CPU_KEYS = ("cpu", "cpu_model", "cpu.model", "cpu.name", "model_name", "model name")
_ARCH_KEYS = ("arch", "machine", "architecture", "goarch")


def _camel(component: str) -> str:
    return "".join(word[:1].upper() + word[1:] for word in re.split(r"[^A-Za-z0-9]+", component) if word)


def benchmark_name(metric: str) -> str:
    """``syscall.getppid.latency`` → ``BenchmarkSyscallGetppid`` (see the module docstring)."""
    parts = metric.split(".")
    stem = parts[:-1] if len(parts) > 1 else parts
    name = "Benchmark" + "".join(_camel(p) for p in stem)
    return name + "_" if re.search(r"-\d+$", name) else name


def go_unit(m: MetricComparison) -> str:
    """The unit benchstat sees (see the module docstring)."""
    return unit_for(m.metric, m.unit)


def unit_for(metric: str, unit_name: str) -> str:
    """The unit benchstat sees for ``metric`` in ``unit_name`` (see the module docstring)."""
    unit = re.sub(r"\s+", "", unit_name) or "value"
    base = "ns/op" if unit == "ns" else unit
    stat = metric.rsplit(".", 1)[-1] if "." in metric else ""
    if stat and stat not in ("latency", unit):
        return f"{re.sub(r'[^A-Za-z0-9_]+', '_', stat)}-{base}"
    return base


def _format_value(value: float) -> str:
    return f"{value:.6g}" if abs(value) < 1e15 else f"{value:.6e}"


def _lookup(context: Mapping[str, Any], keys: tuple[str, ...], accept: Callable[[str], bool] = bool) -> str | None:
    """The first context value whose dotted key, or its last part, is one of ``keys`` and that ``accept`` takes."""
    for key, value in flat_items(context):
        if (key in keys or key.rsplit(".", 1)[-1] in keys) and accept(value):
            return value
    return None


def _label_key(report: ComparisonReport) -> str:
    kind = re.sub(r"[^A-Za-z0-9_-]+", "-", report.label_kind or "label").strip("-") or "label"
    return kind if kind == "kernel" else f"kbench-{kind}"


def _header(report: ComparisonReport) -> list[str]:
    context = report.context
    arch = _lookup(context, _ARCH_KEYS, lambda value: value in _GOARCH) or platform.machine()
    lines = ["goos: linux", f"goarch: {_GOARCH.get(arch, arch or 'unknown')}", "pkg: kbench"]
    cpu = _lookup(context, _CPU_KEYS)
    if cpu:
        lines.append(f"cpu: {' '.join(cpu.split())}")
    units: dict[str, str] = {}
    for m in report.metrics:
        units.setdefault(go_unit(m), "higher" if m.direction == HIGHER_IS_BETTER else "lower")
    lines.extend(f"Unit {unit} better={better} assume=nothing" for unit, better in units.items())
    return lines


def _results(m: MetricComparison, side: SideData, central: float) -> list[str]:
    name, unit = benchmark_name(m.metric), go_unit(m)
    values = side.trial_statistics or (central,)
    lines = []
    for i, value in enumerate(values):
        iterations = side.series[i].values.size if i < len(side.series) and side.series[i].values.size else 1
        lines.append(f"{name} {iterations} {_format_value(value)} {unit}")
    return lines


def _side_lines(report: ComparisonReport, label: str, *, with_key: bool) -> list[str]:
    lines = [f"{_label_key(report)}: {label}"] if with_key else []
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
