"""Comparisons by instruction counts (``--metric instructions``): runs until the counts decide.

Every side is its benchmark counted (``kinds.instructions``) and stored as a run of
``<benchmark>.instructions``. Counts need no interleaving: a counter does not drift with the
machine. So the sides run one after another, a round at a time, on one target per kernel (a
guest booted once with kbench's TCG plugin; this machine for ``None``), and stop as soon as
every side's counts repeat (``kbench.compare.counts``): one round when every sample of a run
counts the same, two when a run gives one value or its samples differ, up to ``max_runs``
when the counts vary and must be judged statistically. Stored counted runs
(``compare --runs``) are judged the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kbench.compare.counts import SideCounts, decided, judge_counts
from kbench.compare.verdict import Verdict
from kbench.contract.counts import COUNTS_FORMAT, NOT_TIME
from kbench.contract.request import BadRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.runner import RunResult, execute_run
from kbench.engine.series import MetricSeries
from kbench.engine.stored_comparison import runs_label
from kbench.engine.stored_run import StoredRun, load_stored_run
from kbench.kinds.instructions.benchmark import counted
from kbench.kinds.instructions.run import counted_request
from kbench.store.db import Store
from kbench.targets.base import Target
from kbench.targets.factory import make_target

DEFAULT_MAX_RUNS = 5
"""Runs per side at most, for counts that vary."""

RunCallback = Callable[[str, int], None]  # side label, run index


@dataclass(frozen=True)
class CountedRun:
    """One stored counted run, as a comparison reads it (just measured, or read back)."""

    run_id: int
    metric: str
    values: np.ndarray
    series: tuple[MetricSeries, ...]
    header: dict[str, Any]

    @classmethod
    def measured(cls, result: RunResult) -> CountedRun:
        return cls(result.run_id, result.metric, result.per_op_values, tuple(result.series),
                   result.measurement.header)

    @classmethod
    def stored(cls, run: StoredRun) -> CountedRun:
        return cls(run.run_id, run.metric, run.values, tuple(run.series), run.measurement.header)


@dataclass
class CountedSide:
    """A side counted: its label, metric and direction, and its stored runs in order."""

    label: str
    metric: str
    direction: str
    runs: list[CountedRun] = field(default_factory=list)

    def counts(self) -> SideCounts:
        return SideCounts.of([run.values for run in self.runs])

    def mode_counts(self, mode: str) -> SideCounts | None:
        """The side's counts of one mode (``user``/``kernel``), when its counter told them apart."""
        runs = []
        for run in self.runs:
            found = next((s for s in run.series if s.name == f"{run.metric}.{mode}"), None)
            if found is None:
                return None
            runs.append(found.values)
        return SideCounts.of(runs)

    @property
    def header(self) -> dict[str, Any]:
        return self.runs[0].header if self.runs else {}

    @property
    def run_ids(self) -> list[int]:
        return [run.run_id for run in self.runs]


@dataclass(frozen=True)
class CountedComparison:
    """The sides counted, the verdict of each new side against the first, and the wall time."""

    sides: list[CountedSide]
    verdicts: list[Verdict]
    mode_verdicts: list[list[Verdict]]
    """Per new side: kernel and user apart (where the counter told them apart)."""
    seconds: float

    @property
    def metric(self) -> str:
        return self.sides[0].metric

    @property
    def source(self) -> dict[str, Any]:
        return dict(self.sides[0].header.get("source") or {})

    def notes(self) -> list[str]:
        """What every report of the comparison says beside the verdicts: that instructions are
        not time, and what counting cost where valgrind did it."""
        notes = [f"warning: {NOT_TIME}"]
        for side in self.sides:
            slowdown = side.header.get("slowdown") or {}
            if slowdown.get("factor"):
                notes.append(f"{side.label}: valgrind ran it {slowdown['factor']:g}x slower than natively "
                             f"({slowdown['counted_s']:g} s against {slowdown['native_s']:g} s an execution)")
            elif side.header.get("counted_s"):
                notes.append(f"{side.label}: a run took {side.header['counted_s']:g} s under valgrind")
        return notes


def counted_sides(sides: Sequence[ComparisonSide]) -> list[ComparisonSide]:
    """The sides with their benchmarks counted (BadRequest for a kind that cannot be)."""
    found = []
    for side in sides:
        benchmark = counted(side.benchmark)
        request = counted_request(benchmark, replace(side.request, benchmark=benchmark.name, counters=False))
        found.append(replace(side, benchmark=benchmark, request=request))
    return found


def counted_comparison(
    store: Store, sides: Sequence[ComparisonSide], *, alpha: float = 0.05, margin: float | None = None,
    max_runs: int = DEFAULT_MAX_RUNS, target: Target | None = None, local_kernel: bool = False,
    on_run: RunCallback | None = None,
) -> CountedComparison:
    """Count every side (``counted_sides``) and judge each new side against the first.

    ``target``: where every side runs (a guest already booted to count, with the user's
    modules); otherwise one target per kernel of the sides, made to count."""
    if max_runs < 1:
        raise BadRequest(f"runs per side must be at least 1, got {max_runs}")
    started = time.monotonic()
    planned = counted_sides(sides)
    found = [CountedSide(side.label, side.benchmark.metric, side.benchmark.direction) for side in planned]
    by_kernel: dict[str | None, list[int]] = {}
    for index, side in enumerate(planned):
        by_kernel.setdefault(side.kernel, []).append(index)
    for kernel, group in by_kernel.items():
        with _target(target, kernel, local_kernel) as machine:
            for round_index in range(max_runs):
                for index in group:
                    if on_run is not None:
                        on_run(planned[index].label, round_index)
                    result = execute_run(store, planned[index].benchmark, planned[index].request, machine)
                    found[index].runs.append(CountedRun.measured(result))
                if decided([found[index].counts() for index in group]):
                    break
    return judged(found, alpha=alpha, margin=margin, seconds=time.monotonic() - started)


def stored_counted_comparison(
    store: Store, selected: Sequence[Sequence[int]], *, alpha: float = 0.05, margin: float | None = None,
) -> CountedComparison:
    """Stored counted runs (``compare --runs``), a side per selection, judged as counts
    (BadRequest for a run that counted nothing: it was timed). Nothing is measured: ``seconds`` 0."""
    sides = []
    for ids in selected:
        runs = [load_stored_run(store, run_id) for run_id in ids]
        for run in runs:
            if run.measurement.header.get("format") != COUNTS_FORMAT:
                raise BadRequest(f"run {run.run_id} ({run.metric}) was timed, not counted: --metric instructions "
                                 "compares runs stored with it")
        first = runs[0]
        sides.append(CountedSide(runs_label(list(ids)), first.metric, first.record.direction,
                                 [CountedRun.stored(run) for run in runs]))
    metrics = {side.metric for side in sides}
    if len(metrics) > 1:
        raise BadRequest(f"the runs count different metrics ({', '.join(sorted(metrics))})")
    return judged(sides, alpha=alpha, margin=margin, seconds=0.0)


def judged(sides: list[CountedSide], *, alpha: float, margin: float | None, seconds: float) -> CountedComparison:
    """Each new side's verdicts against the first (the total, then kernel and user apart)."""
    base = sides[0]
    why = str(base.header.get("source", {}).get("varies") or "")
    verdicts, modes = [], []
    for new in sides[1:]:
        verdicts.append(judge_counts(base.counts(), new.counts(), direction=base.direction, alpha=alpha,
                                     margin=margin, why_varied=why, metric=base.metric))
        per_mode = []
        found = {mode: (base.mode_counts(mode), new.mode_counts(mode)) for mode in ("kernel", "user")}
        counted_modes = [mode for mode, (b, n) in found.items()
                         if b is not None and n is not None and (b.count or n.count)]
        if len(counted_modes) > 1:  # one mode alone is the total again
            for mode in counted_modes:
                b, n = found[mode]
                assert b is not None and n is not None
                per_mode.append(judge_counts(b, n, direction=base.direction, alpha=alpha, margin=margin,
                                             why_varied=why, metric=f"{base.metric}.{mode}"))
        modes.append(per_mode)
    return CountedComparison(sides, verdicts, modes, seconds)


@contextmanager
def _target(given: Target | None, kernel: str | None, local_kernel: bool) -> Iterator[Target]:
    if given is not None:
        yield given
        return
    with make_target(kernel, local_kernel=local_kernel, count_instructions=True) as made:
        yield made
