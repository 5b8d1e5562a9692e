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
    return float(np.median(measurement.per_op("cycles")))


def test_spin_costs_the_same_per_loop(kbench_vm: VmTarget) -> None:
    """Each round measures 100, 200 and 400 loops back to back, in a random order: a TCG guest
    changes speed by up to 2x between phases of seconds, so the linearity is judged within
    each round (the second 200 loops cost twice the first 100) and over the rounds' median."""
    rounds = 5
    found = interleaved_rounds(np.random.default_rng(1), [100, 200, 400], rounds,
                               lambda loops: [_cycles_per_call(kbench_vm, loops)])
    c100, c200, c400 = (np.array(found[n]) for n in (100, 200, 400))
    assert np.all(c100 < c400)
    assert float(np.median(c100)) < float(np.median(c200)) < float(np.median(c400))
    ratios = (c400 - c200) / (c200 - c100)
    assert float(np.median(ratios)) == pytest.approx(2.0, rel=0.3), ratios


def test_interleaved_comparison_of_two_loop_counts_in_one_guest(kbench_vm: VmTarget, tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'spin.db'}")
    bench = lookup("kfunc.spin")
    sides = [ComparisonSide(f"loops={n}", "deb:guest", bench, RunRequest(bench.name, {"loops": str(n)}))
             for n in (100, 150)]
    outcome = run_interleaved(store, sides, kbench_vm, budget_s=20, margin=0.005, samples=500)
    verdict = outcome.sequential["loops=150"].last
    assert verdict is not None and verdict.verdict is not None
    assert verdict.verdict.verdict == "regression"
    assert 25 < verdict.verdict.change_pct < 75 and verdict.verdict.ci_pct[0] > 0
    runs = {s.label: s.run_id for s in outcome.sides}
    stored = store.get_run(runs["loops=150"])
    assert stored.params == {"loops": "150"} and stored.status == "complete"
    assert {"slot", "block", "ticks"} <= set(store.load_samples(runs["loops=150"]))
