"""crosscheck's statistics and its stored form (real SQLite store, real local target info)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import RunRequest
from kbench.engine.crosscheck import Crosscheck, MethodSpec, Round, execution_trees, group_means
from kbench.engine.crosscheck_store import crosscheck_lines, store_crosscheck
from kbench.engine.stored_run import load_stored_run
from kbench.report.run_json import run_json
from kbench.store.db import Store
from kbench.targets.local import LocalTarget
from kbench.trace.utilisation import CpuTime, ThreadTime, Utilisation

SPECS = (MethodSpec("probe", "probe", "ns"), MethodSpec("tracepoints", "tracepoints", "ns", "plus outside"))


def test_group_means_align_with_the_end() -> None:
    values = np.arange(10, dtype=np.float64)
    assert group_means(values, 3).tolist() == [2.0, 5.0, 8.0]  # 1,2,3 | 4,5,6 | 7,8,9; 0 left out
    assert group_means(values, 1).tolist() == values.tolist()
    assert group_means(values, 11).size == 0


def test_group_means_of_alternating_calls_are_the_batch_mean() -> None:
    """writev's calls alternate cheap/dear: the median of single calls jumps, the batch means do not."""
    calls = np.tile([1550.0, 1720.0], 3000)
    assert group_means(calls, 2) == pytest.approx(np.full(3000, 1635.0))
    shifted = np.concatenate([[1720.0], calls])  # one call more at the start: same groups from the end
    assert group_means(shifted, 2) == pytest.approx(np.full(3000, 1635.0))


def _round(first: float, second: float, n: int = 100, second_correction: float = 0.0) -> Round:
    rng = np.random.default_rng(int(first + second))
    return Round(first + rng.normal(0, 1, n), second + rng.normal(0, 1, n), 0.0, second_correction)


def test_a_method_is_the_median_of_its_rounds_medians() -> None:
    """One round in a slow mode (+50%) moves neither method's median: it is one of five."""
    rounds = (_round(500, 250, second_correction=-250), _round(502, 251, second_correction=-250),
              _round(750, 251, second_correction=-250), _round(499, 249, second_correction=-251),
              _round(501, 250, second_correction=-249))
    result = Crosscheck("syscall.getppid", "latency", "tracefs", SPECS, rounds, 15.0)
    probe, traced = result.methods
    assert probe.median == pytest.approx(np.median([np.median(r.first) for r in rounds]))
    assert probe.median == pytest.approx(501, abs=2)
    assert traced.correction == -250.0
    assert traced.corrected == pytest.approx(500, abs=2)
    assert result.agrees and abs(result.agreement_pct) < 1
    data = result.to_json()
    assert data["rounds_agreeing"] == 4  # the slow round alone is +50%
    assert {"method", "median", "p90", "n", "unit"} <= set(data["methods"][0])
    assert data["methods"][0]["n"] == 500


def test_disagreement_names_the_side_that_counts_more() -> None:
    result = Crosscheck("syscall.getppid", "latency", "tracefs", SPECS, (_round(2500, 250, second_correction=-280),),
                        15.0)
    assert not result.agrees and result.verdict == "disagree"
    assert result.agreement_pct == pytest.approx(100 * (2500 / 530 - 1), abs=1)
    assert result.reason().startswith("probe counts")
    other = Crosscheck("x", "q", "s", SPECS, (_round(250, 2500),), 15.0)
    assert other.reason().startswith("tracepoints sees")


def _thread(pid: int, ppid: int, cycles: int, comm: str = "sh") -> ThreadTime:
    return ThreadTime(cpu=1, pid=pid, tgid=pid, ppid=ppid, comm=comm, cycles=cycles, switches=1)


def test_execution_trees_follow_fork_parentage_below_the_probe() -> None:
    threads = [_thread(100, 50, 10, "kbench-probe"), _thread(101, 100, 5), _thread(102, 101, 7),
               _thread(103, 100, 3), _thread(104, 102, 1), _thread(200, 1, 99, "other")]
    util = Utilisation("tracefs", 1000, [CpuTime(1, 0, 1000, 0)], threads,
                       measured=frozenset({100, 101, 102, 103, 104}))
    assert execution_trees(util) == {101: {101, 102, 104}, 103: {103}}


def _stored_crosscheck(tmp_path: Path) -> tuple[Store, Crosscheck, str, list[int]]:
    store = Store.open(f"sqlite:///{tmp_path / 'x.db'}")
    result = Crosscheck("syscall.writev_t1k", "latency of one writev() call", "tracefs", SPECS,
                        (_round(1960, 1660, second_correction=-290), _round(1950, 1650, second_correction=-300)), 15.0)
    bench = lookup("syscall.writev_t1k")
    crosscheck_id, run_ids = store_crosscheck(store, result, bench, RunRequest(bench.name, samples=100), LocalTarget(),
                                              {"rounds": 2})
    return store, result, crosscheck_id, run_ids


def test_each_method_is_stored_as_a_run_tagged_with_the_crosscheck(tmp_path: Path) -> None:
    store, result, crosscheck_id, run_ids = _stored_crosscheck(tmp_path)
    assert len(run_ids) == 2
    tagged = store.list_runs(tag=f"crosscheck:{crosscheck_id}")
    assert sorted(row["id"] for row in tagged) == sorted(run_ids)
    for run_id, method in zip(run_ids, result.methods, strict=True):
        view = load_stored_run(store, run_id)
        assert view.record.metric == f"syscall.writev_t1k.crosscheck.{method.role}"
        assert f"method:{method.role}" in view.record.tags
        assert view.values.tolist() == method.values.tolist()
        assert view.summary is not None and view.summary.p50 == pytest.approx(float(np.median(method.values)))
        shown = run_json(view)
        assert shown["crosscheck"]["id"] == crosscheck_id
        assert shown["crosscheck"]["agreement_pct"] == pytest.approx(result.agreement_pct)
    # a stored crosscheck never joins the benchmark's own series (its primary metric)
    metrics = {row["metric"] for row in store.list_runs(benchmark="syscall.writev_t1k")}
    assert lookup("syscall.writev_t1k").metric not in metrics


def test_the_stored_crosscheck_prints_as_the_command_did(tmp_path: Path) -> None:
    store, _result, crosscheck_id, run_ids = _stored_crosscheck(tmp_path)
    header = load_stored_run(store, run_ids[0]).measurement.header
    lines = crosscheck_lines(header["crosscheck"])
    assert lines[0].endswith(f"id {crosscheck_id}")
    assert any(line.strip().startswith("verdict: agree") for line in lines)
    assert any("correction of tracepoints: +295.0 ns" in line for line in lines)
    assert lines[-1].endswith(f"kbench results --tag crosscheck:{crosscheck_id}")


def test_syscall_crosscheck_batch_keeps_every_traced_call_in_the_log() -> None:
    from kbench.engine.crosscheck import MAX_BATCH, TRACED_CALLS, traced_batch

    # kbench.ko's default log of 262,144 entries, split over up to 8 CPUs, holds the run.
    assert TRACED_CALLS <= 262_144 // 8
    assert traced_batch(2000) == 16 and 2000 * traced_batch(2000) <= TRACED_CALLS
    assert traced_batch(10) == MAX_BATCH
    assert traced_batch(100_000) == 1 and traced_batch(None) == MAX_BATCH
