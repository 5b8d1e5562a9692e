"""A crosscheck kept in the store and shown again: one run per method, tagged with its id.

Each method's values are stored as a run of the benchmark (metric
``<benchmark>.crosscheck.<role>``, so they never mix with the benchmark's own series),
tagged ``crosscheck``, ``crosscheck:<id>`` and ``method:<role>``, with the whole
crosscheck (both methods, the agreement, the verdict) in the run's header. ``kbench
results --tag crosscheck:<id>`` lists both; ``kbench show`` of either prints the
crosscheck beside the method's own distribution.
"""

from __future__ import annotations

import dataclasses
import math
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from kbench.contract.formats import CROSSCHECK_FORMAT

if TYPE_CHECKING:
    from kbench.contract.benchmark import Benchmark
    from kbench.contract.measurement import Measurement
    from kbench.contract.request import RunRequest
    from kbench.engine.crosscheck import Crosscheck
    from kbench.store.db import Store
    from kbench.targets.base import Target, TargetInfo
    from kbench.targets.transport import RunKind



def new_crosscheck_id() -> str:
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


@dataclasses.dataclass(frozen=True)
class _MethodValues:
    """A target whose one measurement is a method's values (so execute_run stores them)."""

    target: Any
    header: dict[str, Any]
    values: np.ndarray

    def info(self) -> TargetInfo:
        info: TargetInfo = self.target.info()
        return info

    def sysinfo(self) -> dict[str, Any]:
        found: dict[str, Any] = self.target.sysinfo()
        return found

    def wrap_run(self, benchmark: Benchmark, request: RunRequest,
                 run: Callable[[Target], Measurement], kind: RunKind) -> Measurement:
        """The method's values, nothing run."""
        from kbench.contract.measurement import Measurement

        return Measurement(header=self.header, columns={"value": self.values}, interrupted=False,
                           stderr="")


def store_crosscheck(store: Store, result: Crosscheck, benchmark: Benchmark, request: RunRequest, target: Any,
                     options: dict[str, Any]) -> tuple[str, list[int]]:
    """Store each method as a run; (the crosscheck id, the run ids in method order)."""
    from kbench.engine.runner import execute_run

    crosscheck_id = new_crosscheck_id()
    data = result.to_json()
    run_ids: list[int] = []
    for index, method in enumerate(result.methods):
        header = {"format": CROSSCHECK_FORMAT, "crosscheck": {**data, "id": crosscheck_id, "method": index,
                                                              "options": options},
                  "warnings": [] if result.agrees else [f"crosscheck {crosscheck_id}: the methods disagree "
                                                        f"({result.agreement_pct:+.1f}%)"]}
        stored = dataclasses.replace(benchmark, metric=f"{benchmark.name}.crosscheck.{method.role}",
                                     unit=method.unit, direction="lower")
        tagged = dataclasses.replace(request, tags=(*request.tags, "crosscheck", f"crosscheck:{crosscheck_id}",
                                                    f"method:{method.role}"))
        run = execute_run(store, stored, tagged, _MethodValues(target, header, method.values))
        run_ids.append(run.run_id)
    return crosscheck_id, run_ids


def _fmt(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:,.1f}"


def crosscheck_lines(data: dict[str, Any]) -> list[str]:
    """The crosscheck as text, from its JSON (a fresh result or a stored run's header)."""
    methods = data["methods"]
    width = max(len(m["method"]) for m in methods)
    lines = [f"crosscheck {data['benchmark']}: {data['quantity']} ({data['source']})"
             + (f", id {data['id']}" if data.get("id") else ""),
             f"  {'method':<{width}}  {'median':>10}  {'p90':>10}  {'n':>8}  {'corrected':>10}  unit"]
    for m in methods:
        lines.append(f"  {m['method']:<{width}}  {_fmt(m['median']):>10}  {_fmt(m['p90']):>10}  {m['n']:>8}  "
                     f"{_fmt(m['corrected']):>10}  {m['unit']}")
    for m in methods:
        if m["correction"]:
            lines.append(f"  correction of {m['method'].split(' (')[0]}: {-m['correction']:+,.1f} {m['unit']}, "
                         f"{m['correction_why']}")
    if data.get("statistic"):
        lines.append(f"  values: {data['statistic']}")
    rounds = data.get("rounds") or []
    lines.append(f"  ratio of medians {data['ratio']:.3f}; corrected, they differ by {data['agreement_pct']:+.1f}% "
                 f"(tolerance ±{data['tolerance_pct']:g}%)")
    if rounds:
        each = ", ".join(f"{r['agreement_pct']:+.1f}%" for r in rounds)
        lines.append(f"  rounds: {each} ({data.get('rounds_agreeing', 0)} of {len(rounds)} within the tolerance)")
    lines.append(f"  verdict: {data['verdict']} — {data['reason']}")
    lines += [f"  note: {note}" for note in data.get("notes", [])]
    if data.get("run_ids"):
        lines.append(f"  stored as runs {', '.join(map(str, data['run_ids']))} "
                     f"(kbench results --tag crosscheck:{data['id']})")
    elif data.get("id"):
        lines.append(f"  both methods' runs: kbench results --tag crosscheck:{data['id']}")
    return lines
