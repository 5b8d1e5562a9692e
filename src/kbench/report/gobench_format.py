"""The Go benchmark text format that ``benchstat`` reads: kbench's one writer of its pieces.

``kbench compare --format gobench`` (``report.comparison.gobench``) and ``kbench export
--format gobench`` (``report.interop.gobench_text``) both write through this module:

- configuration lines ``key: value`` (``goos``, ``goarch``, ``pkg``, ``cpu``, and the key
  naming the sides, ``side_key``), values on one line;
- ``Unit <unit> better=higher|lower assume=nothing`` lines giving each unit's direction;
- result lines ``<name> <iterations> <value> <unit>``.

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
"""

from __future__ import annotations

import platform
import re
from collections.abc import Mapping

GOARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "i686": "386",
          "i386": "386", "armv7l": "arm", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}
"""Go's name of a machine architecture (``uname -m``)."""
LARGE = 1e15
"""From this magnitude on, values are written in exponent form with all their digits."""


def _camel(component: str) -> str:
    return "".join(word[:1].upper() + word[1:] for word in re.split(r"[^A-Za-z0-9]+", component) if word)


def benchmark_name(metric: str) -> str:
    """``syscall.getppid.latency`` → ``BenchmarkSyscallGetppid`` (see the module docstring)."""
    parts = metric.split(".")
    stem = parts[:-1] if len(parts) > 1 else parts
    name = "Benchmark" + "".join(_camel(p) for p in stem)
    return name + "_" if re.search(r"-\d+$", name) else name


def unit_for(metric: str, unit_name: str) -> str:
    """The unit benchstat sees for ``metric`` in ``unit_name`` (see the module docstring)."""
    unit = re.sub(r"\s+", "", unit_name) or "value"
    base = "ns/op" if unit == "ns" else unit
    stat = metric.rsplit(".", 1)[-1] if "." in metric else ""
    if stat and stat not in ("latency", unit):
        return f"{re.sub(r'[^A-Za-z0-9_]+', '_', stat)}-{base}"
    return base


def side_key(kind: str | None) -> str:
    """The configuration key whose value names a side: ``kernel`` for kernels (benchstat's
    ``-col kernel``), ``kbench-<kind>`` for other sides (``kbench-program``, ``kbench-side``)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", kind or "label").strip("-") or "label"
    return cleaned if cleaned == "kernel" else f"kbench-{cleaned}"


def config_line(key: str, value: str) -> str:
    """``key: value`` with the value's blanks (new lines too) folded into single spaces."""
    return f"{key}: {' '.join(value.split())}"


def header(units: Mapping[str, bool], *, arch: str | None = None, cpu: str | None = None) -> list[str]:
    """The configuration (``goos``, ``goarch`` of ``arch`` or this machine, ``pkg``, ``cpu``
    when known) and a ``Unit`` line per unit, ``units`` saying whether higher is better."""
    machine = arch or platform.machine()
    lines = ["goos: linux", f"goarch: {GOARCH.get(machine, machine or 'unknown')}", "pkg: kbench"]
    if cpu:
        lines.append(config_line("cpu", cpu))
    lines.extend(f"Unit {unit} better={'higher' if higher else 'lower'} assume=nothing"
                 for unit, higher in units.items())
    return lines


def number(value: float, digits: int) -> str:
    """``value`` with ``digits`` significant digits (exponent form from LARGE on)."""
    return f"{value:.{digits}g}" if abs(value) < LARGE else f"{value:.{digits}e}"


def result_line(name: str, iterations: int, value: str, unit: str) -> str:
    """One measurement: ``<name> <iterations> <value> <unit>``."""
    return f"{name} {iterations} {value} {unit}"
