"""A watch's side-by-side comparison is evidence only if each side measured what its build measured before."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from kbench.builds.compare import BuildComparison, SideSummary
from kbench.store.db import Store
from kbench.watch.plausible import earlier_cpu_ns, implausible
from tests.unit.test_store import _begin

GOOD, BAD = "a" * 40, "b" * 40


def _store_runs(store: Store, commit: str, cpu_ms: list[float]) -> None:
    """A complete ``command`` run of ``commit`` per value: 5 executions around that CPU time."""
    for value in cpu_ms:
        run_id = _begin(store, benchmark="command", metric="command.wall", tags=[f"commit:{commit[:12]}"])
        cpu = np.array([value * 1e6 * f for f in (0.99, 1.0, 1.0, 1.01, 1.02)])
        store.finish_run(run_id, status="complete", summaries=[], probe_header={},
                         columns={"ticks": np.ones(5, dtype=np.uint64),
                                  "utime_ns": (0.9 * cpu).astype(np.uint64), "stime_ns": (0.1 * cpu).astype(np.uint64)})


def _found(base_ms: float, new_ms: float) -> BuildComparison:
    return BuildComparison(base=SideSummary(GOOD, base_ms * 1e6, 1.0, 40), new=SideSummary(BAD, new_ms * 1e6, 1.0, 40),
                           verdict={"verdict": "regression", "change_pct": 100 * (new_ms / base_ms - 1),
                                    "ci_pct": [1.0, 2.0], "p_value": 0.001},
                           blocks=20, elapsed_s=10.0, design="interleaved", run_ids=[1, 2])


def test_the_earlier_runs_of_a_build_are_read_from_its_samples(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    _store_runs(store, GOOD, [60.0, 58.0])
    found = sorted(earlier_cpu_ns(store, GOOD))
    # the median of 5 executions, user + system: 60 ms and 58 ms (independent: 0.9 + 0.1 of the planted value)
    assert [math.isclose(v, ms * 1e6, rel_tol=1e-6) for v, ms in zip(found, [58.0, 60.0], strict=True)] == [True] * 2
    assert earlier_cpu_ns(store, BAD) == []


def test_a_side_far_outside_its_builds_earlier_runs_is_not_evidence(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    _store_runs(store, GOOD, [60.0, 58.0, 61.0])
    _store_runs(store, BAD, [62.0, 63.0])
    assert implausible(store, _found(59.0, 62.5)) is None  # a real 6 % change
    why = implausible(store, _found(0.69, 62.5))  # the parent 'measured' at 0.69 ms
    assert why is not None and why.startswith(f"the comparison measured {GOOD[:12]} at 0.690 ms of CPU per execution")
    assert "58.000 .. 61.000 ms in 3 runs" in why and why.endswith("a failed measurement, not evidence")
    assert implausible(store, _found(59.0, 130.0)) is not None  # more than twice the largest
    assert implausible(store, _found(59.0, 125.0)) is None  # within twice the largest (63 ms)


def test_a_build_with_no_earlier_runs_is_not_judged(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    assert implausible(store, _found(0.69, 62.5)) is None
