"""Compare runs already in the store.

Runs of the trial design: each run is one trial of its side (Mann-Whitney, as measured).
A run imported from another tool's file whose samples carry a ``trial`` column (hyperfine:
each execution is a fresh process; pyperf: each worker process) gives one trial per value
of that column.

Runs of one interleaved comparison (``kbench.engine.interleaved``: one run per side, whose
header's ``interleaved`` entry names the same comparison): the slots are rebuilt from
the stored samples (columns ``slot`` and ``block``) and judged again block by block, with
one look at the whole of alpha - the verdict of a fixed design over the stored blocks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from kbench.catalog.benchmarks import find_benchmark, lookup
from kbench.compare.paired import PairedSequential
from kbench.contract.benchmark import Benchmark, ParamSpec, UnknownBenchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import BadRequest, RunRequest
from kbench.engine.compare_protocol import ComparisonOutcome, ComparisonSide, SideTrials, StoredTrial
from kbench.engine.interleaved_outcome import (
    InterleavedOutcome,
    InterleavedSide,
    MetricInfo,
    Slot,
    metrics_of,
    slot_values,
)
from kbench.engine.stored_run import StoredRun, load_stored_run
from kbench.kinds import suite
from kbench.kinds.registry import kind_that_wrote
from kbench.profile.counters import counter_metric, counter_metric_values, counter_series
from kbench.store.db import RunRecord, Store


def stored_outcome(store: Store, sides: list[list[int]], *, benchmark: str | None = None,
                   counters: bool = False) -> ComparisonOutcome:
    """Sides of stored runs; all runs must measure the same metric, and ``benchmark`` when given (checked).
    ``counters``: judge the perf counters the runs stored too (``compare --counters``)."""
    if len(sides) < 2:
        raise BadRequest("a comparison needs at least two sides: give --runs twice or more")
    results = []
    metrics = set()
    for run_ids in sides:
        trials = []
        for run_id in run_ids:
            view = load_stored_run(store, run_id)
            metrics.add(view.record.metric)
            trials.extend(_trials(view, counters))
        first = load_stored_run(store, run_ids[0]).record
        bench = stored_benchmark(first)
        label = runs_label(run_ids)
        side = ComparisonSide(label=label, kernel=None, benchmark=bench,
                              request=RunRequest(benchmark=bench.name, params=first.params))
        results.append(SideTrials(side, list(trials)))
    if len(metrics) != 1:
        raise BadRequest(f"the runs measure different metrics ({', '.join(sorted(metrics))}): nothing to compare")
    measured = results[0].side.benchmark.name
    if benchmark and lookup(benchmark).name != measured:
        raise BadRequest(f"the runs measure {measured}, not {lookup(benchmark).name}")
    return ComparisonOutcome(results, [], None, 0, "stored runs (no new measurement)")


def stored_interleaved(store: Store, sides: list[list[int]], *, alpha: float, counters: bool = False,
                       margin: float | None) -> InterleavedOutcome | None:
    """The interleaved comparison the runs came from, re-judged (module docstring); None when the
    runs are not exactly one run per side of one interleaved comparison."""
    if len(sides) < 2 or any(len(ids) != 1 for ids in sides):
        return None
    views = [load_stored_run(store, ids[0]) for ids in sides]
    designs = [view.measurement.header.get("interleaved") or {} for view in views]
    comparisons = {d.get("comparison") for d in designs}
    if len(comparisons) != 1 or None in comparisons:
        return None
    benchmark = stored_benchmark(views[0].record)
    metric = str(designs[0].get("metric") or views[0].record.metric)
    kind = "cpu" if metric.endswith(".cpu") else "wall"
    metrics = metrics_of(benchmark, kind) + (_stored_counter_metrics(views, benchmark) if counters else [])
    slots = [slot for index, view in enumerate(views) for slot in _slots(index, view, benchmark)]
    slots.sort(key=lambda s: s.index)
    complete = [b for b in range(max((s.block for s in slots), default=-1) + 1)
                if all(sum(1 for s in slots if s.side == i and s.block == b) >= 1 for i in range(len(views)))]
    blocks = len(complete)
    if complete != list(range(blocks)):
        return None
    labels = [runs_label(ids) for ids in sides]
    sequential = {label: PairedSequential(direction=metrics[0].direction, alpha=alpha, margin=margin,
                                          metric=metrics[0].name, unit=metrics[0].unit) for label in labels[1:]}
    interleaved_sides = [
        InterleavedSide(ComparisonSide(label=label, kernel=None, benchmark=benchmark,
                                       request=RunRequest(benchmark=benchmark.name, params=view.record.params)),
                        run_id=view.record.id)
        for label, view in zip(labels, views, strict=True)
    ]
    description = str(designs[0].get("description") or "interleaved")
    hz = float((views[0].measurement.header.get("timer") or {}).get("hz") or 0)
    return InterleavedOutcome(
        interleaved_sides, metrics, slots, blocks, sequential,
        f"{description} (stored comparison {comparisons.pop()}, judged again with one look)", 0.0, 0.0,
        str(designs[0].get("slot") or ""), "", str(designs[0].get("comparison")),
        ns_per_unit={metrics[0].name: 1e9 / hz} if metrics[0].unit == "cycles" and hz > 0 else {},
        measured_labels=tuple(str(d.get("side") or "") for d in designs),
        run_blocks=_run_blocks(designs[0], blocks),
    )


def _run_blocks(design: dict[str, Any], blocks: int) -> tuple[int, ...]:
    """The stored judged blocks of each run of the module, where they add up to ``blocks``."""
    stored = (design.get("in_kernel") or {}).get("run_blocks")
    if not isinstance(stored, list) or not all(isinstance(n, int) and n >= 0 for n in stored):
        return ()
    return tuple(stored) if sum(stored) == blocks else ()


def _slots(side: int, view: StoredRun, benchmark: Benchmark) -> list[Slot]:
    columns = view.measurement.columns
    if "slot" not in columns or "block" not in columns:
        return []
    counted = _slot_counters(view, benchmark)
    found = []
    for slot in np.unique(columns["slot"][columns["block"] >= 0]):  # block -1: measured, not judged
        rows = columns["slot"] == slot
        part = Measurement(header=view.measurement.header, columns={k: v[rows] for k, v in columns.items()},
                           interrupted=False, stderr="")
        values = {**slot_values(benchmark, part, counters=False), **counted.get(int(slot), {})}
        found.append(Slot(side, int(columns["block"][rows][0]), int(slot), values, 0.0))
    return found


def _slot_counters(view: StoredRun, benchmark: Benchmark) -> dict[int, dict[str, float]]:
    """Each slot's counter figures as the side's run stored them (``counters.slots``), by slot."""
    raw = view.measurement.header.get("counters") or {}
    found: dict[int, dict[str, float]] = {}
    for entry in raw.get("slots") or ():
        metrics = entry.get("metrics") or {}
        found[int(entry["slot"])] = {counter_metric(benchmark.metric, figure): float(value)
                                     for figure, value in metrics.items() if value is not None}
    return found


def _stored_counter_metrics(views: list[StoredRun], benchmark: Benchmark) -> list[MetricInfo]:
    """The counter metrics every side's stored slots carry (units and directions from the totals)."""
    per_side = []
    for view in views:
        names: set[str] = set()
        for values in _slot_counters(view, benchmark).values():
            names |= set(values)
        per_side.append(names)
    totals = counter_metric_values(views[0].measurement.header, benchmark.metric)
    common = set.intersection(*per_side) if per_side else set()
    return [MetricInfo(name, unit, direction) for name, (_, unit, direction) in totals.items() if name in common]


def _trials(view: StoredRun, counters: bool = False) -> list[StoredTrial]:
    """The run as one trial, or an imported run as one trial per value of its ``trial`` column."""
    counted = counter_series(view.measurement.header, view.record.metric) if counters else []
    whole = StoredTrial(run_id=view.record.id, metric=view.record.metric, series=view.series,
                        counter_series=counted)
    trial = view.measurement.columns.get("trial")
    if trial is None or "imported" not in view.measurement.header:
        return [whole]
    found = []
    for number in np.unique(trial):
        rows = trial == number
        series = [replace(s, values=s.values[rows]) if s.values.size == rows.size else s for s in view.series]
        found.append(StoredTrial(run_id=view.record.id, metric=view.record.metric, series=series,
                                 counter_series=counted))
    return found


def stored_benchmark(record: RunRecord) -> Benchmark:
    """The catalog's benchmark of a stored run; for a run imported from another tool's file
    (hyperfine, pyperf: not in the catalog), one made from the run: a whole-tool benchmark
    with the run's metric, unit, direction and parameters."""
    found = find_benchmark(record.benchmark)  # the catalog's, without listing every kind's benchmarks
    if found is not None:
        return found
    try:
        return lookup(record.benchmark)
    except UnknownBenchmark:
        header = record.probe_header or {}
        writer = kind_that_wrote(header)
        if writer is not None and writer.in_kernel:  # a benchmark of the user's own module (--module)
            return Benchmark(
                name=record.benchmark, kind=writer.name, workload=str(header.get("workload") or record.benchmark),
                description="a benchmark of a module of one's own", unit=record.unit, metric=record.metric,
                direction=record.direction,
                params=tuple(ParamSpec(name, "str", str(value), "") for name, value in (record.params or {}).items()))
        imported = header.get("imported")
        if not isinstance(imported, dict):
            raise
    tool = str(imported.get("format") or "another tool")
    return Benchmark(
        name=record.benchmark, kind=suite.KIND.name, workload=record.benchmark, description=f"imported from {tool}",
        unit=record.unit, metric=record.metric, direction=record.direction,
        params=tuple(ParamSpec(name, "str", str(value), "") for name, value in (record.params or {}).items()),
    )


def measure_stored_margins(outcome: InterleavedOutcome, alpha: float) -> None:
    """Give every new side of a re-judged comparison a margin measured from all its stored
    blocks (``kbench.compare.noise_margin``), for a comparison given none."""
    primary = outcome.metrics[0].name
    for new, side in enumerate(outcome.sides[1:], start=1):
        replaced = PairedSequential(direction=outcome.metrics[0].direction, alpha=alpha, margin=None,
                                    metric=primary, unit=outcome.metrics[0].unit, margin_from_noise=True)
        ratios = outcome.log_ratios(new, primary)
        replaced.measure_margin(ratios, int(ratios.size), final=True)
        outcome.sequential[side.label] = replaced


def runs_label(run_ids: list[int]) -> str:
    """``run 7``, ``runs 31-39`` or ``runs 31-39,41``: a side of stored runs, ids in the order given
    with consecutive ones as ranges."""
    if len(run_ids) == 1:
        return f"run {run_ids[0]}"
    groups: list[list[int]] = []
    for run_id in run_ids:
        if groups and run_id == groups[-1][-1] + 1:
            groups[-1].append(run_id)
        else:
            groups.append([run_id])
    return "runs " + ",".join(f"{g[0]}-{g[-1]}" if len(g) > 2 else ",".join(map(str, g)) for g in groups)


def measured_on(store: Store, sides: list[list[int]], labels: list[str]) -> dict[str, object]:
    """The machines and kernels that measured each side's runs (not the machine comparing them):
    ``{"measured on": TEXT}`` when every run was measured alike, else one entry per side label."""
    from kbench.sysinfo.collect import machine_summary

    described: list[list[str]] = []
    for run_ids in sides:
        found: dict[str, None] = {}
        for run_id in run_ids:
            record = store.get_run(run_id)
            target = record.target or {}
            where = target.get("kind") or "?"
            if target.get("accel"):
                where += f", {target['accel']}"
            found[f"{machine_summary(dict(record.sysinfo or {}))}; kernel {target.get('kernel_release') or '?'} "
                  f"({where})"] = None
        described.append(list(found))
    if all(d == described[0] for d in described) and len(described[0]) == 1:
        return {"measured on": described[0][0]}
    return {"measured on": {label: " | ".join(d) for label, d in zip(labels, described, strict=True)}}
