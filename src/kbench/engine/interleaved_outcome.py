"""What an interleaved comparison measured (``InterleavedOutcome``: its sides, slots and looks),
apart from the runner that measures it (``kbench.engine.interleaved``).

Reports, stored replays (``kbench.engine.stored_comparison``) and ``kbench sensitivity``
read outcomes; importing this module imports nothing that measures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kbench.compare.paired import PairedSequential, block_log_ratios
from kbench.compare.slot import COMMAND_METRICS, command_slot, interquartile_mean
from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.engine.compare_protocol import ComparisonSide
from kbench.profile.counters import counter_metric_values

if TYPE_CHECKING:
    from kbench.engine.runner import StartedRun

INTERLEAVED_DESIGN = "interleaved: randomized mirrored blocks, Wilcoxon signed-rank on block log-ratios"
"""The design in a few words (every verdict of it starts its ``design`` with this)."""


@dataclass(frozen=True)
class MetricInfo:
    name: str
    unit: str
    direction: str


@dataclass
class Slot:
    side: int
    block: int
    index: int
    values: dict[str, float]
    seconds: float


@dataclass
class InterleavedSide:
    side: ComparisonSide
    run_id: int = 0
    started: StartedRun | None = None
    columns: dict[str, list[np.ndarray]] = field(default_factory=dict)
    header: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)
    interrupted: bool = False
    counter_readings: list[dict[str, Any]] = field(default_factory=list)
    counter_slots: list[dict[str, Any]] = field(default_factory=list)
    failure: dict[str, Any] = field(default_factory=lambda: {"count": 0, "before": 0, "stopped": False})
    """Failed executions its slots timed (``--ignore-failure``), summed as the probe's header ``failure``."""

    @property
    def label(self) -> str:
        return self.side.label


@dataclass
class InterleavedOutcome:
    """Everything measured: slots in order, the sides' stored runs, and the sequential looks."""

    sides: list[InterleavedSide]
    metrics: list[MetricInfo]  # the primary first
    slots: list[Slot]
    blocks: int
    sequential: dict[str, PairedSequential]
    design: str
    elapsed_s: float
    budget_s: float
    slot_text: str
    metric_reason: str
    comparison_id: str
    ns_per_unit: dict[str, float] = field(default_factory=dict)
    """Nanoseconds per unit of a metric counted in cycles (the TSC rate of the target)."""
    measured_labels: tuple[str, ...] = ()
    """Re-judged stored runs: the labels their sides had when they were measured."""
    run_blocks: tuple[int, ...] = ()
    """Inside kbench.ko: the judged blocks of each run of the module, in order (they sum to ``blocks``)."""

    def side_values(self, side: int, metric: str) -> list[float]:
        """Every judged slot's value of ``metric`` for one side, in order (NaN where a slot has none:
        a counter that was not counted in it)."""
        return [s.values.get(metric, math.nan) for s in self.slots if s.side == side and s.block < self.blocks]

    def block_values(self, side: int, metric: str) -> list[list[float]]:
        per_block: list[list[float]] = [[] for _ in range(self.blocks)]
        for s in self.slots:
            if s.side == side and s.block < self.blocks:
                per_block[s.block].append(s.values.get(metric, math.nan))
        return per_block

    def log_ratios(self, new: int, metric: str) -> np.ndarray:
        return block_log_ratios(self.block_values(0, metric), self.block_values(new, metric))


def metrics_of(benchmark: Benchmark, metric: str) -> list[MetricInfo]:
    if benchmark.name == "command":
        names = [COMMAND_METRICS[metric], *(m for key, m in COMMAND_METRICS.items() if key != metric)]
        return [MetricInfo(name, "ns", benchmark.direction) for name in names]
    return [MetricInfo(benchmark.metric, benchmark.unit, benchmark.direction)]


def slot_values(benchmark: Benchmark, measurement: Measurement, *, counters: bool = True) -> dict[str, float]:
    """The slot's value of every metric: the timed ones and, when it counted (``counters``), its
    perf counters per operation (``kbench.profile.counters``)."""
    if benchmark.name == "command":
        columns = measurement.columns
        values = command_slot(measurement.per_op("ns"), columns["utime_ns"], columns["stime_ns"])
    else:
        from kbench.kinds.registry import kind_of  # the kinds, only for a benchmark that is not a command

        timed = measurement.per_op(kind_of(benchmark).sample_unit or "ns")
        disturbed = measurement.columns.get("disturbed")
        if disturbed is not None:  # samples an interrupt or a context switch reached (kbench.ko's A/B runs)
            timed = timed[np.asarray(disturbed) == 0]
        values = {benchmark.metric: interquartile_mean(timed) if timed.size else float("nan")}
    if counters:
        values.update((name, value) for name, (value, _, _) in
                      counter_metric_values(measurement.header, benchmark.metric).items())
    return values

