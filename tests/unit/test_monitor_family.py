"""LKP's monitor figures are judged with the same statistics as a benchmark's own metrics, as a family of
their own: a hundred proc-vmstat rows do not weaken the multiple-comparison correction of the benchmark's
secondary metrics (kbench.report.comparison.build.verdicts_for)."""

from __future__ import annotations

import numpy as np

from kbench.catalog.benchmarks import lookup
from kbench.compare.judge import compare_trials
from kbench.compare.multiple import adjust
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.engine.compare_protocol import ComparisonOutcome, ComparisonSide, SideTrials, StoredTrial
from kbench.report.comparison.build import verdicts_for

MONITOR_NAMES = [f"proc-vmstat.counter{i}" for i in range(30)]


def side(label: str, shift: float, seed: int) -> SideTrials:
    rng = np.random.default_rng(seed)
    bench = lookup("netperf.TCP_RR")
    runs = []
    for trial in range(6):
        series = [MetricSeries("netperf.TCP_RR.transactions_per_s", "trans/s", "higher",
                               np.array([1000.0 + rng.normal(0, 5)])),
                  MetricSeries("netperf.TCP_RR.latency_mean", "us", "lower",
                               np.array([100.0 * shift + rng.normal(0, 1)]))]
        series += [MetricSeries(name, "events", "lower", np.array([50.0 * shift + rng.normal(0, 1)]))
                   for name in MONITOR_NAMES]
        runs.append(StoredTrial(run_id=trial, metric=series[0].name, series=series))
    return SideTrials(ComparisonSide(label, None, bench, RunRequest(benchmark=bench.name)), runs)


def test_monitors_are_a_family_of_their_own() -> None:
    base, new = side("a", 1.0, 1), side("b", 1.02, 2)
    outcome = ComparisonOutcome(sides=[base, new], order=["a", "b"], sequential=None, rounds=0, design="trials")
    found = {verdict.metric: verdict for _, verdict, _ in verdicts_for(outcome, alpha=0.05, margin=None,
                                                                        correction="holm")}
    latency = "netperf.TCP_RR.latency_mean"
    alone = compare_trials(base.statistics(latency), new.statistics(latency), direction="lower", alpha=0.05,
                           margin=None, metric=latency, unit="us")
    assert found[latency].p_value == alone.p_value  # one secondary metric of its own: nothing to correct
    monitors = [compare_trials(base.statistics(n), new.statistics(n), direction="lower", alpha=0.05, margin=None,
                               metric=n, unit="events") for n in MONITOR_NAMES]
    corrected = {v.metric: v.p_value for v in adjust(monitors, "holm")}
    assert {n: found[n].p_value for n in MONITOR_NAMES} == corrected  # Holm over the 30 monitors only
    assert max(corrected.values()) > alone.p_value
