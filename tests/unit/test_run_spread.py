"""The runs-disagree check beside an in-kernel verdict (kbench.compare.run_spread)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from kbench.catalog.benchmarks import lookup
from kbench.compare.paired import PairedSequential
from kbench.compare.run_spread import WARNING_RUNS_DISAGREE, runs_disagree
from kbench.contract.request import RunRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.interleaved import InterleavedOutcome, InterleavedSide, MetricInfo, Slot
from kbench.report.comparison.build import build_interleaved_report


def _kruskal_by_hand(groups: list[np.ndarray]) -> float:
    """H = 12 / (N (N + 1)) * sum(R_i^2 / n_i) - 3 (N + 1) with no ties, p from chi2(k - 1)."""
    pooled = np.concatenate(groups)
    ranks = np.empty(pooled.size)
    ranks[np.argsort(pooled)] = np.arange(1, pooled.size + 1)
    n = pooled.size
    sums, start = 0.0, 0
    for g in groups:
        sums += ranks[start:start + g.size].sum() ** 2 / g.size
        start += g.size
    h = 12.0 / (n * (n + 1)) * sums - 3 * (n + 1)
    return float(stats.chi2.sf(h, len(groups) - 1))


def test_a_run_that_went_its_own_way_is_named_with_the_runs_medians() -> None:
    rng = np.random.default_rng(3)
    runs = [np.log1p(0.0165 + 0.004 * rng.standard_normal(20)) for _ in range(20)]
    runs[7] = np.log1p(0.040 + 0.004 * rng.standard_normal(20))
    warning = runs_disagree(np.concatenate(runs), [20] * 20)
    assert warning is not None and warning.startswith(f"{WARNING_RUNS_DISAGREE}: the 20 runs of the module")
    low = min(100 * np.expm1(np.median(r)) for r in runs)
    high = max(100 * np.expm1(np.median(r)) for r in runs)
    assert f"between {low:+.2f}% and {high:+.2f}%" in warning
    p = float(warning.split("p=")[1].split(")")[0])
    assert p == pytest.approx(_kruskal_by_hand(runs), rel=0.05)  # printed to 2 digits


def test_runs_that_agree_say_nothing() -> None:
    """200 comparisons whose runs differ by noise alone: the check's level is 0.1 %, so a warning
    in more than 3 of them has probability below 1e-4 (binomial, 200 at 0.001)."""
    rng = np.random.default_rng(11)
    warned = sum(runs_disagree(0.0165 + 0.01 * rng.standard_normal(400), [20] * 20) is not None for _ in range(200))
    assert warned <= 3


@pytest.mark.parametrize(("values", "runs"), [
    (np.r_[np.zeros(20), np.ones(20)], [20, 20]),  # two runs: too few to tell a run from the rest
    (np.r_[np.zeros(20), np.ones(20), np.zeros(20)], [20, 20]),  # the runs do not cover the blocks
    (np.r_[np.zeros(20), np.ones(20), np.zeros(4)], [20, 20, 4]),  # a run of 4 blocks does not count
    (np.zeros(60), [20, 20, 20]),  # all equal
    (np.zeros(60), []),  # the runs are not known (a comparison from outside)
])
def test_what_cannot_show_runs_disagreeing_says_nothing(values: np.ndarray, runs: list[int]) -> None:
    assert runs_disagree(values, runs) is None


def test_an_in_kernel_report_carries_the_warning_on_its_primary_metric() -> None:
    rng = np.random.default_rng(5)
    bench = lookup("kfunc.spin")
    sides = [InterleavedSide(ComparisonSide(label, "deb:x", bench, RunRequest(bench.name, {})), run_id=i + 1)
             for i, label in enumerate(("loops=98", "loops=100"))]
    blocks = 100
    offset = [0.045 if 40 <= block < 60 else 0.0165 for block in range(blocks)]  # the third of five runs
    slots = [Slot(side, block, 4 * block + 2 * side + half,
                  {"kfunc.spin.cycles": 270.0 * (1 + offset[block] * side) * (1 + 0.002 * rng.standard_normal())},
                  1e-5)
             for block in range(blocks) for side in (0, 1) for half in (0, 1)]
    metric = MetricInfo("kfunc.spin.cycles", "cycles", "lower")
    sequential = {"loops=100": PairedSequential(direction="lower", alpha=0.05, margin=0.005)}
    outcome = InterleavedOutcome(sides, [metric], slots, blocks, sequential, "blocks", 1.0, 20.0, "slot", "", "abc",
                                 run_blocks=(20,) * 5)
    report = build_interleaved_report(outcome, title="t", label_kind="configuration", alpha=0.05, margin=0.005,
                                      correction="holm", context={}, parameters={})
    (judged,) = report.metrics
    assert judged.verdict == "regression"
    assert [w for w in judged.warnings if w.startswith(WARNING_RUNS_DISAGREE)], judged.warnings
    quiet = build_interleaved_report(
        InterleavedOutcome(sides, [metric], slots, blocks, {"loops=100": PairedSequential(direction="lower")},
                           "blocks", 1.0, 20.0, "slot", "", "abc"),
        title="t", label_kind="configuration", alpha=0.05, margin=0.005, correction="holm", context={},
        parameters={})
    assert not [w for w in quiet.metrics[0].warnings if w.startswith(WARNING_RUNS_DISAGREE)]  # runs not known
