"""The instruments' own cost: nested tracepoint pairs, and a probe on an empty function.

Tracepoints, as the seL4 benchmarking extensions measure them: an outer pair around an
empty inner pair. The inner pair logs the cycles the instrumentation adds to any
measurement: the *effective* overhead. The outer pair logs those plus one whole inner
pair, so outer - inner is the cycles one START/STOP pair adds to the execution: the
*total* overhead. Each inner entry is paired with the outer entry of the same task
and CPU that contains it.

A function probe, the same way: the durations a probe logs of an empty function are
its effective overhead; the empty function's cycles per call with the probe minus
without it are its total overhead.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from kbench.stats.dispersion import sample_stdev
from kbench.trace.log import KIND_TRACEPOINT, TraceLog
from kbench.trace.selection import measured_entries


@dataclass(frozen=True)
class OverheadTable:
    """One row of the seed's tables: # samples, min, max, mean, std dev (ddof=1), std dev %."""

    samples: int
    min: float
    max: float
    mean: float
    stdev: float
    stdev_pct: float

    @classmethod
    def of(cls, values: np.ndarray) -> OverheadTable:
        if values.size == 0:
            return cls(0, float("nan"), float("nan"), float("nan"), float("nan"), float("nan"))
        mean = float(values.mean())
        stdev = sample_stdev(values)
        return cls(int(values.size), float(values.min()), float(values.max()), mean, stdev,
                   100 * stdev / mean if mean else float("nan"))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TracepointOverhead:
    total: OverheadTable
    effective: OverheadTable
    outer_key: int
    inner_key: int
    median_total: float
    median_effective: float

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total.to_json(), "effective": self.effective.to_json(), "outer_key": self.outer_key,
            "inner_key": self.inner_key, "median_total": self.median_total,
            "median_effective": self.median_effective, "unit": "cycles",
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TracepointOverhead:
        return cls(OverheadTable(**data["total"]), OverheadTable(**data["effective"]), int(data["outer_key"]),
                   int(data["inner_key"]), float(data["median_total"]), float(data["median_effective"]))


def nested_pairs(log: TraceLog, outer: int = 0, inner: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(outer cycles, inner cycles) of every inner entry lying inside an outer one."""
    entries = measured_entries(log).entries
    entries = entries[entries["kind"] == KIND_TRACEPOINT]
    outers = entries[entries["key"] == outer]
    inners = entries[entries["key"] == inner]
    found_outer: list[int] = []
    found_inner: list[int] = []
    for who in {(int(p), int(c)) for p, c in zip(outers["pid"], outers["cpu"], strict=True)}:
        o = outers[(outers["pid"] == who[0]) & (outers["cpu"] == who[1])]
        i = inners[(inners["pid"] == who[0]) & (inners["cpu"] == who[1])]
        o = o[np.argsort(o["start"], kind="stable")]
        # The outer entry that started last before each inner one.
        at = np.searchsorted(o["start"], i["start"], side="right") - 1
        ok = at >= 0
        at, i = at[ok], i[ok]
        inside = i["start"] + i["cycles"] <= o["start"][at] + o["cycles"][at]
        found_outer.extend(o["cycles"][at[inside]].tolist())
        found_inner.extend(i["cycles"][inside].tolist())
    return np.asarray(found_outer, dtype=np.float64), np.asarray(found_inner, dtype=np.float64)


def tracepoint_overhead(log: TraceLog, outer: int = 0, inner: int = 1) -> TracepointOverhead:
    outer_cycles, inner_cycles = nested_pairs(log, outer, inner)
    total = outer_cycles - inner_cycles
    return TracepointOverhead(
        total=OverheadTable.of(total), effective=OverheadTable.of(inner_cycles), outer_key=outer, inner_key=inner,
        median_total=float(np.median(total)) if total.size else float("nan"),
        median_effective=float(np.median(inner_cycles)) if inner_cycles.size else float("nan"),
    )


@dataclass(frozen=True)
class ProbeOverhead:
    """A kretprobe's cost, from the empty function ``kbench_probe_target`` in this boot."""

    effective: OverheadTable  # durations the probe logged of the empty function
    median_effective: float
    call_with_probe: float  # median cycles per call of the empty function, probed
    call_without_probe: float  # the same, not probed (mean of a run before and one after)

    @property
    def total(self) -> float:
        return self.call_with_probe - self.call_without_probe

    def to_json(self) -> dict[str, Any]:
        return {
            "effective": self.effective.to_json(), "median_effective": self.median_effective,
            "call_with_probe": self.call_with_probe, "call_without_probe": self.call_without_probe,
            "total": self.total, "unit": "cycles",
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeOverhead:
        return cls(OverheadTable(**data["effective"]), float(data["median_effective"]),
                   float(data["call_with_probe"]), float(data["call_without_probe"]))
