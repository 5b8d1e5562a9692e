"""What can be measured: every benchmark's name, parameters, unit and direction.

User-space workloads are defined once, in the probe's C table; ``kbench-probe --list``
is read here so the two can never disagree. Kernel-function benchmarks come from
``kfunc.py`` (they are defined by kbench.ko's bench table).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from kbench import children
from kbench.native import find_native

LOWER_IS_BETTER = "lower"
HIGHER_IS_BETTER = "higher"


class UnknownBenchmark(LookupError):
    """No benchmark has that name; the message suggests the closest ones."""


class BadParameter(ValueError):
    """A benchmark parameter is unknown or its value has the wrong type."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str  # "int", "str", "bool", "float"
    default: str
    description: str


@dataclass(frozen=True)
class Benchmark:
    """A measurable thing. ``metric`` follows ``<suite>.<test>.<stat>``."""

    name: str
    kind: str  # "probe" (user space) or "kfunc" (kbench.ko)
    workload: str  # the probe workload or the kbench.ko bench name
    description: str
    unit: str
    metric: str
    direction: str
    params: tuple[ParamSpec, ...]
    columns: tuple[str, ...] = ("ticks",)

    def param(self, name: str) -> ParamSpec:
        for spec in self.params:
            if spec.name == name:
                return spec
        known = [p.name for p in self.params]
        hint = _did_you_mean(name, known)
        listing = ", ".join(known) if known else "none"
        raise BadParameter(f"{self.name} has no parameter {name!r}{hint}; its parameters: {listing}")

    def validate_params(self, values: dict[str, str]) -> dict[str, str]:
        """Check names and value types; returns the values unchanged when valid."""
        for name, value in values.items():
            spec = self.param(name)
            _check_type(self.name, spec, value)
        return values


def _check_type(bench: str, spec: ParamSpec, value: str) -> None:
    if spec.type == "int":
        try:
            int(value, 0)
        except ValueError:
            raise BadParameter(f"{bench}: {spec.name} must be an integer, got {value!r}") from None
    elif spec.type == "float":
        try:
            float(value)
        except ValueError:
            raise BadParameter(f"{bench}: {spec.name} must be a number, got {value!r}") from None
    elif spec.type == "bool" and value not in ("0", "1", "true", "false", "yes", "no"):
        raise BadParameter(f"{bench}: {spec.name} must be 0 or 1, got {value!r}")


def _did_you_mean(name: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(name, choices, n=3, cutoff=0.5)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _probe_benchmark(entry: dict[str, Any]) -> Benchmark:
    workload = entry["name"]
    name = "command" if workload == "command" else f"syscall.{workload}"
    stat = "wall" if workload == "command" else "latency"
    return Benchmark(
        name=name,
        kind="probe",
        workload=workload,
        description=entry.get("description", ""),
        unit="ns",
        metric=f"{name}.{stat}",
        direction=LOWER_IS_BETTER,
        params=tuple(
            ParamSpec(
                name=p["name"],
                type=p.get("type", "str"),
                default=str(p.get("default", "")),
                description=p.get("description", ""),
            )
            for p in entry.get("params", [])
        ),
        columns=tuple(entry.get("columns", ["ticks"])),
    )


@cache
def probe_benchmarks() -> tuple[Benchmark, ...]:
    """The probe's workloads as benchmarks (one ``kbench-probe --list`` call)."""
    probe = find_native("kbench-probe")
    out = children.run([str(probe), "--list"], capture_output=True, text=True, check=True)
    return tuple(_probe_benchmark(entry) for entry in json.loads(out.stdout))


def all_benchmarks() -> dict[str, Benchmark]:
    from kbench.catalog.kfunc import kfunc_benchmarks
    from kbench.catalog.scale import scale_benchmarks
    from kbench.suites import suite_benchmarks

    found = {b.name: b for b in probe_benchmarks()}
    found.update({b.name: b for b in kfunc_benchmarks()})
    found.update({b.name: b for b in scale_benchmarks()})
    found.update({s.name: s.as_benchmark() for s in suite_benchmarks()})
    return found


def lookup(name: str) -> Benchmark:
    """The benchmark called ``name``; UnknownBenchmark with suggestions otherwise."""
    benches = all_benchmarks()
    if name in benches:
        return benches[name]
    # Accept a bare workload name as a convenience ("getppid" for "syscall.getppid").
    for prefix in ("syscall.", "kfunc.", "will-it-scale."):
        if prefix + name in benches:
            return benches[prefix + name]
    hint = _did_you_mean(name, list(benches))
    raise UnknownBenchmark(f"unknown benchmark {name!r}{hint}; `kbench list` shows them all")
