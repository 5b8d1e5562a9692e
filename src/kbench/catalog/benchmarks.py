"""What can be measured: every benchmark's name, parameters, unit and direction.

User-space workloads are defined once, in the probe's C table; ``kbench-probe --list``
is read here so the two can never disagree. Kernel-function benchmarks come from
``kfunc.py`` (they are defined by kbench.ko's bench table).
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from typing import Any

# Re-exported until every importer takes them from kbench.contract (docs/architecture.md).
from kbench.contract.benchmark import BadParameter as BadParameter
from kbench.contract.benchmark import Benchmark as Benchmark
from kbench.contract.benchmark import ParamSpec as ParamSpec
from kbench.contract.benchmark import UnknownBenchmark as UnknownBenchmark
from kbench.contract.benchmark import did_you_mean
from kbench.contract.vocabulary import HIGHER_IS_BETTER as HIGHER_IS_BETTER
from kbench.contract.vocabulary import LOWER_IS_BETTER as LOWER_IS_BETTER
from kbench.native import find_native


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
    out = subprocess.run([str(probe), "--list"], capture_output=True, text=True, check=True)
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
    hint = did_you_mean(name, list(benches))
    raise UnknownBenchmark(f"unknown benchmark {name!r}{hint}; `kbench list` shows them all")
