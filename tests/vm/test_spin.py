"""kfunc.spin in a real Debian kernel under qemu: its cost grows by the same amount per loop, and an
interleaved comparison of two loop counts in one guest finds the difference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import RunRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.interleave import interleaved_rounds
from kbench.engine.interleaved import run_interleaved
from kbench.kinds.registry import measure
from kbench.store.db import Store
from kbench.targets.vm_target import VmTarget

pytestmark = pytest.mark.vm


def _cycles_per_call(target: VmTarget, loops: int) -> float:
    bench = lookup("kfunc.spin")
    # one batch for every loop count: the harness cost per call must not change with it
    measurement = measure(target, bench, RunRequest(bench.name, {"loops": str(loops)}, samples=2000, batch=16))
    return float(np.percentile(measurement.per_op("cycles"), 10))


def test_spin_costs_the_same_per_loop(kbench_vm: VmTarget) -> None:
    """A TCG guest runs in two speed modes about 1.6x apart (400 loops: 1,171 or 1,930
    cycles), switching within a measurement and between measurements of a fraction of a
    second. The cost of the fast mode is the machine's own; it is the 10th percentile of a
    measurement's samples, and the lowest of them over rounds measured in a random order.
    Its increments must be linear: the second 2,000 loops cost twice the first 1,000."""
    rounds = 16  # each loop count must meet the fast mode at least once (8 rounds missed it once in CI)
    found = interleaved_rounds(np.random.default_rng(1), [1000, 2000, 4000], rounds,
                               lambda loops: [_cycles_per_call(kbench_vm, loops)])
    c1000, c2000, c4000 = (min(found[n]) for n in (1000, 2000, 4000))
    assert c1000 < c2000 < c4000, found
    assert (c4000 - c2000) / (c2000 - c1000) == pytest.approx(2.0, rel=0.25), found
    # the harness adds a small, fixed cost: the line through the points nearly meets zero
    intercept = c1000 - (c2000 - c1000)
    assert abs(intercept) < 0.25 * c1000, found


def test_interleaved_comparison_of_two_loop_counts_in_one_guest(kbench_vm: VmTarget, tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'spin.db'}")
    bench = lookup("kfunc.spin")
    sides = [ComparisonSide(f"loops={n}", "deb:guest", bench, RunRequest(bench.name, {"loops": str(n)}))
             for n in (1000, 1500)]
    outcome = run_interleaved(store, sides, kbench_vm, budget_s=20, margin=0.005, samples=500)
    verdict = outcome.sequential["loops=1500"].last
    assert verdict is not None and verdict.verdict is not None
    assert verdict.verdict.verdict == "regression"
    assert 25 < verdict.verdict.change_pct < 75 and verdict.verdict.ci_pct[0] > 0
    runs = {s.label: s.run_id for s in outcome.sides}
    stored = store.get_run(runs["loops=1500"])
    assert stored.params == {"loops": "1500"} and stored.status == "complete"
    assert {"slot", "block", "ticks"} <= set(store.load_samples(runs["loops=1500"]))
