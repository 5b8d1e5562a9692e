"""The trial-level comparison protocol: interleaved, randomized trials on two or more sides.

Used where a trial is expensive or whole (a kernel boot per block of trials, a suite run);
for commands, syscalls and in-kernel functions on one target the finer interleaved design
of ``kbench.engine.interleaved`` is the default.

A *side* is what is compared: a kernel, a command, a build. A *trial* is one stored run
(a fresh probe process, or one run of kbench.ko); its statistic is the median of its
steady-state part (``kbench.compare.trial_statistic``). Trials, not samples, are the
evidence: samples inside one run are correlated.

Order: every round runs one block per side, the sides in a random order drawn from a
seeded generator, so a slow drift of the machine cannot masquerade as a difference. A
block on a VM side is one boot running ``trials_per_boot`` trials (the two-level design
of Kalibera & Jones: variation between boots is part of the evidence); on the local
kernel a block is one trial.

Metric: a side's trials are judged on its benchmark's primary metric; a ``command`` side on
the one its ``metric`` names (``cpu``: the child's user + system time per execution, from
wait4; ``wall``: spawn + exec + wait4), the other reported beside it, as the interleaved
design does. On a shared machine the wall time of a short program also holds the time it
waited for a CPU: a 1.3 ms shell loop measured 1.3 or 3.9 ms with one other CPU-bound
process running, as long as a loop doing four times the work.

Stopping: fixed (``max_trials`` per side), or adaptive: after every round the new pairs of
trial statistics of the primary metric feed a ``SequentialComparison`` per new side
(alpha spending over the planned looks), and the comparison stops once every side is
decided (different / same within the margin) or the budget is spent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol

import numpy as np

from kbench.compare.slot import COMMAND_METRICS, CPU
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.compare.trial import trial_statistic
from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.engine.interleave import round_order
from kbench.engine.series import MetricSeries

if TYPE_CHECKING:  # measuring imports them: `kbench compare --runs` reads stored trials without them
    from kbench.compare.sequential import SequentialComparison
    from kbench.engine.runner import RunResult
    from kbench.engine.target_factory import TargetFactory
    from kbench.store.db import Store

TrialCallback = Callable[[str, int, int], None]  # side label, trial index, planned trials


@dataclass(frozen=True)
class ComparisonSide:
    """One side: a label in the user's words, where it runs, and what it measures."""

    label: str
    kernel: str | None
    benchmark: Benchmark
    request: RunRequest


class TrialRun(Protocol):
    """A trial as the comparison sees it: a measured run or a stored one."""

    @property
    def run_id(self) -> int: ...

    @property
    def metric(self) -> str: ...

    @property
    def series(self) -> list[MetricSeries]: ...

    @property
    def counter_series(self) -> list[MetricSeries]:
        """The run's perf counters per operation, one value each (none when it counted nothing)."""
        ...


@dataclass(frozen=True)
class StoredTrial:
    """A trial loaded from the store (``kbench compare --runs``)."""

    run_id: int
    metric: str
    series: list[MetricSeries]
    counter_series: list[MetricSeries] = field(default_factory=list)


def judged_trial(result: RunResult, metric: str | None) -> TrialRun:
    """``result`` as a trial judged on ``metric`` (module docstring): a ``command`` run gets its
    CPU time per execution as a series, the judged metric first; any other run, or any run
    when ``metric`` is None, is itself."""
    columns = result.measurement.columns
    if (metric is None or result.benchmark.name != "command" or not result.series
            or not {"utime_ns", "stime_ns"} <= columns.keys()):
        return result
    wall = result.series[0]
    cpu_ns = columns["utime_ns"].astype(np.float64) + columns["stime_ns"].astype(np.float64)
    cpu = MetricSeries(COMMAND_METRICS[CPU], "ns", wall.direction, cpu_ns)
    series = [cpu, wall] if metric == CPU else [wall, cpu]
    return StoredTrial(run_id=result.run_id, metric=series[0].name, series=series)


@dataclass
class SideTrials:
    side: ComparisonSide
    runs: list[TrialRun] = field(default_factory=list)
    _statistics: dict[str, list[float]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def primary_metric(self) -> str:
        return self.runs[0].metric if self.runs else self.side.benchmark.metric

    def metrics(self) -> list[tuple[str, str, str]]:
        """(name, unit, direction) of every metric, the primary first, the perf counters last."""
        if not self.runs:
            return []
        return [(s.name, s.unit, s.direction) for s in (*self.runs[0].series, *self.runs[0].counter_series)]

    def values(self, metric: str) -> list[np.ndarray]:
        """Each trial's values of ``metric`` (per op, per iteration or per interval; a counter's
        one value per operation)."""
        return [s.values for run in self.runs for s in (*run.series, *run.counter_series)
                if s.name == metric and s.values.size]

    def statistics(self, metric: str) -> list[float]:
        """Each trial's statistic of ``metric`` (``trial_statistic``), computed once per trial: a
        report asks for them several times, and each is a warm-up search over the trial's samples."""
        values = self.values(metric)
        known = self._statistics.get(metric, [])
        if len(known) < len(values):  # trials are only ever added
            known = [*known, *(trial_statistic(v) for v in values[len(known):])]
            self._statistics[metric] = known
        return list(known)


@dataclass
class ComparisonOutcome:
    sides: list[SideTrials]
    order: list[str]  # side labels in the order their blocks ran
    sequential: dict[str, SequentialComparison] | None
    rounds: int
    design: str


def _blocks_per_side(max_trials: int, per_block: int) -> int:
    return math.ceil(max_trials / per_block)


def run_comparison(
    store: Store,
    sides: list[ComparisonSide],
    make_target: TargetFactory,
    *,
    max_trials: int = 10,
    min_trials: int = 5,
    adaptive: bool = True,
    alpha: float = DEFAULT_ALPHA,
    margin: float | None = None,
    seed: int = 0,
    trials_per_boot: int = 3,
    on_trial: TrialCallback | None = None,
    tags: tuple[str, ...] = (),
    metric: str | None = None,
) -> ComparisonOutcome:
    """Measure every side ``max_trials`` times (fewer when adaptive stopping decides);
    ``command`` sides judged on ``metric`` ("cpu" or "wall", module docstring; None: the
    benchmark's primary metric, wall time)."""
    if len(sides) < 2:
        raise ValueError("a comparison needs at least two sides")
    if len({side.label for side in sides}) != len(sides):
        raise ValueError("every side needs its own label")
    from kbench.compare.sequential import SequentialComparison
    from kbench.engine.runner import execute_run

    rng = np.random.default_rng(seed)
    results = [SideTrials(side) for side in sides]
    sequential = (
        {
            side.label: SequentialComparison(
                direction=side.benchmark.direction, alpha=alpha, margin=margin,
                max_trials=max_trials, min_trials=min_trials,
                metric=_judged_metric(side, metric), unit=side.benchmark.unit,
            )
            for side in sides[1:]
        }
        if adaptive
        else None
    )
    fed = dict.fromkeys((side.label for side in sides[1:]), 0)
    order: list[str] = []
    per_block = {side.label: (trials_per_boot if side.kernel not in (None, "local") else 1) for side in sides}
    rounds = max(_blocks_per_side(max_trials, per_block[side.label]) for side in sides)
    done_rounds = 0
    for _ in range(rounds):
        for index in round_order(rng, len(sides)):
            trials = results[index]
            side = trials.side
            remaining = max_trials - len(trials.runs)
            if remaining <= 0:
                continue
            order.append(side.label)
            with make_target(side.kernel) as target:
                for _trial in range(min(per_block[side.label], remaining)):
                    if on_trial is not None:
                        on_trial(side.label, len(trials.runs), max_trials)
                    request = replace(side.request, tags=(*side.request.tags, *tags, f"side:{side.label}"))
                    trials.runs.append(judged_trial(execute_run(store, side.benchmark, request, target), metric))
        done_rounds += 1
        if sequential is not None and _feed(results, sequential, fed):
            break
    design = "adaptive (sequential, alpha spending)" if adaptive else f"fixed ({max_trials} trials per side)"
    return ComparisonOutcome(results, order, sequential, done_rounds, design)


def _judged_metric(side: ComparisonSide, metric: str | None) -> str:
    if metric is not None and side.benchmark.name == "command":
        return COMMAND_METRICS[metric]
    from kbench.catalog.scale import primary_metric

    return primary_metric(side.benchmark, side.request.params)


def _feed(results: list[SideTrials], sequential: dict[str, SequentialComparison], fed: dict[str, int]) -> bool:
    """Give each sequential comparison its new pairs; True when every one has stopped."""
    base = results[0]
    metric = base.primary_metric
    base_stats = base.statistics(metric)
    for new in results[1:]:
        comparison = sequential[new.side.label]
        new_stats = new.statistics(new.primary_metric)
        pairs = min(len(base_stats), len(new_stats))
        while fed[new.side.label] < pairs and not comparison.done:
            k = fed[new.side.label]
            comparison.add(base_stats[k], new_stats[k])
            fed[new.side.label] += 1
    return all(comparison.done for comparison in sequential.values())

