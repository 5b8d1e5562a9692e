"""Series built from a real SQLite store: grouping, selection, versions, the CPU-time metric."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from kbench.history.load import NoSuchSeries, load_series
from kbench.history.series import is_evidence, series_id
from kbench.store.db import Store, SummaryRecord
from tests.history.planting import SYSINFO, fake_commits, noisy, plant_series, target


@pytest.fixture
def store(tmp_path: Path) -> Store:
    return Store.open(f"sqlite:///{tmp_path / 'k.db'}")


def test_runs_group_by_benchmark_parameters_metric_machine_and_target(store: Store) -> None:
    other_machine = {**SYSINFO, "hostname": "lab-box", "memory_bytes": 8 << 30}  # same name, other machine
    a = plant_series(store, noisy(5, seed=1), params={"size": "64"})
    b = plant_series(store, noisy(5, seed=2), params={"size": "4096"})
    c = plant_series(store, noisy(5, seed=3), params={"size": "64"}, sysinfo=other_machine)
    d = plant_series(store, noisy(5, seed=4), params={"size": "64"}, kind="vm", accel="tcg")
    found = load_series(store.engine)
    assert sorted([p.run_id for p in s.points] for s in found) == sorted([a, b, c, d])
    by_runs = {tuple(p.run_id for p in s.points): s for s in found}
    assert by_runs[tuple(d)].target == "vm/tcg" and by_runs[tuple(a)].target == "local"
    assert by_runs[tuple(a)].machine != by_runs[tuple(c)].machine  # told apart though both are "lab-box"
    fingerprint = f"lab-box|{SYSINFO['cpu']['model']}|2|{SYSINFO['memory_bytes']}"
    assert by_runs[tuple(a)].id == series_id("syscall.getppid", {"size": "64"}, "syscall.getppid.latency",
                                             fingerprint, "local")


def test_points_carry_the_version_and_come_oldest_first(store: Store) -> None:
    commits = fake_commits(6)
    kernels = ["6.1.0-55-amd64"] * 3 + ["6.1.0-56-amd64"] * 3
    values = noisy(6, seed=5)
    ids = plant_series(store, values, commits=commits, kernels=kernels, labels=[f"n{i}" for i in range(6)])
    (series,) = load_series(store.engine)
    assert [p.run_id for p in series.points] == ids
    assert [p.commit for p in series.points] == commits
    assert [p.kernel for p in series.points] == kernels
    assert [p.label for p in series.points] == [f"n{i}" for i in range(6)]
    assert series.values() == pytest.approx(values)
    assert series.direction == "lower" and series.unit == "ns"


def test_selectors_id_prefix_benchmark_glob_metric_and_nothing(store: Store) -> None:
    plant_series(store, noisy(4, seed=1))
    plant_series(store, noisy(4, seed=2), benchmark="will-it-scale.getppid1", unit="ops/s", direction="higher",
                 metric="will-it-scale.getppid1.per_process_ops")
    everything = load_series(store.engine)
    wis = next(s for s in everything if s.benchmark.startswith("will"))
    assert [s.id for s in load_series(store.engine, wis.id[:6])] == [wis.id]
    assert [s.id for s in load_series(store.engine, "will-it-scale.*")] == [wis.id]
    assert [s.id for s in load_series(store.engine, "will-it-scale.getppid1.per_process_ops")] == [wis.id]
    assert len(load_series(store.engine, "syscall.getppid")) == 1
    with pytest.raises(NoSuchSeries, match=r"no series matches 'syscall\.nothing'"):
        load_series(store.engine, "syscall.nothing")


def test_runs_that_did_not_complete_are_not_points(store: Store) -> None:
    ids = plant_series(store, noisy(3, seed=1))
    failed = store.begin_run(benchmark="syscall.getppid", metric="syscall.getppid.latency", unit="ns",
                             direction="lower", params={}, request={}, sysinfo=SYSINFO, target=target())
    store.finish_run(failed, status="failed", error="boom")
    (series,) = load_series(store.engine)
    assert [p.run_id for p in series.points] == ids


def test_command_runs_give_a_cpu_time_series_from_their_stored_columns(store: Store) -> None:
    rng = np.random.default_rng(3)
    medians = []
    for _ in range(3):
        run_id = store.begin_run(benchmark="command", metric="command.wall", unit="ns", direction="lower",
                                 params={"cmd": "true"}, request={}, sysinfo=SYSINFO, target=target())
        utime = rng.integers(900_000, 1_100_000, size=25).astype(np.uint64)
        stime = rng.integers(100_000, 200_000, size=25).astype(np.uint64)
        ticks = rng.integers(2_000_000, 3_000_000, size=25).astype(np.uint64)
        wall = SummaryRecord(metric="command.wall", unit="ns", basis="raw", values={
            "n": 25, "min": 1.0, "median": 2.5e6, "p90": 1.0, "p95": 1.0, "p99": 1.0, "max": 1.0, "mean": 1.0,
            "stdev": 1.0, "mad": 1.0, "steady_state_index": 0})
        store.finish_run(run_id, status="complete", columns={"ticks": ticks, "utime_ns": utime, "stime_ns": stime},
                         summaries=[wall])
        medians.append(float(np.median(utime.astype(float) + stime.astype(float))))
    cpu = next(s for s in load_series(store.engine, "command") if s.metric == "command.cpu")
    assert cpu.values() == pytest.approx(medians)
    assert cpu.direction == "lower" and cpu.unit == "ns"


@pytest.mark.parametrize(("tags", "evidence"), [
    (["watch:1", "job:ab12"], False),
    (["watch:1", "head-check", "side:51064d18111a"], True),  # a watch's first look: first commit vs newest
    (["watch:1", "finding:1", "confirm", "side:92025d478e16"], True),
    (["bisect:1", "commit:92025d478e16"], True),
    (["bisect-oracle"], True),
    (["side:a"], False),  # a comparison the user asked for is a series of its own
])
def test_a_conclusions_evidence_is_told_from_a_series_point_by_its_tags(tags: list[str], evidence: bool) -> None:
    assert is_evidence(tags) is evidence
