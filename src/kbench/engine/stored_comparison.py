"""Compare runs already in the store: each run is one trial of its side."""

from __future__ import annotations

from kbench.catalog.benchmarks import Benchmark, lookup
from kbench.engine.compare_protocol import ComparisonOutcome, ComparisonSide, SideTrials, StoredTrial
from kbench.engine.request import BadRequest, RunRequest
from kbench.report.run_view import load_run_view
from kbench.store.db import Store


def stored_outcome(store: Store, sides: list[list[int]]) -> ComparisonOutcome:
    """Sides of stored runs; all runs must measure the same metric (checked)."""
    if len(sides) < 2:
        raise BadRequest("a comparison needs at least two sides: give --runs twice or more")
    results = []
    metrics = set()
    for index, run_ids in enumerate(sides):
        trials = []
        for run_id in run_ids:
            view = load_run_view(store, run_id)
            metrics.add(view.record.metric)
            trials.append(StoredTrial(run_id=run_id, metric=view.record.metric, series=view.series))
        first = load_run_view(store, run_ids[0]).record
        bench = _benchmark(first.benchmark)
        label = f"runs {','.join(map(str, run_ids))}"
        side = ComparisonSide(label=label, kernel=None, benchmark=bench,
                              request=RunRequest(benchmark=bench.name, params=first.params))
        results.append(SideTrials(side, list(trials)))
        del index
    if len(metrics) != 1:
        raise BadRequest(f"the runs measure different metrics ({', '.join(sorted(metrics))}): nothing to compare")
    return ComparisonOutcome(results, [], None, 0, "stored runs (no new measurement)")


def _benchmark(name: str) -> Benchmark:
    return lookup(name)
