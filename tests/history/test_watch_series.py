"""A watch's series of a branch: runs in first-parent order, command CPU time, divided by the job's control.

Runs are planted in a real store as ``kbench watch`` stores them (the command's per-execution
``utime_ns``/``stime_ns`` columns, the commit, the instance's ``job:`` tag); the expected
values are recomputed here from the planted columns with numpy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import update

from kbench.jobs import expand_job
from kbench.store import schema
from kbench.store.db import Store
from kbench.watch.series import COMMAND_METRIC, branch_series
from tests.history.planting import SYSINFO, fake_commits, target

JOB = "benchmark: command\nparams:\n  cmd: [./prog, /opt/ref/prog]\nsamples: 8\niterations: 3\n"
START = datetime(2026, 11, 27, 3, 0, tzinfo=UTC)
COMMITS, MACHINE_AT, STEP_AT = 20, 8, 14


def plant_run(store: Store, cmd: str, commit: str, cpu_ns: float, moment: datetime, seed: int) -> int:
    rng = np.random.default_rng(seed)
    cpu = cpu_ns * (1 + 0.002 * rng.standard_normal(8))
    utime = np.rint(cpu * 0.9).astype(np.uint64)
    stime = np.rint(cpu * 0.1).astype(np.uint64)
    run_id = store.begin_run(benchmark="command", metric="command.wall", unit="ns", direction="lower",
                             params={"cmd": cmd, "shell": "1"}, request={"benchmark": "command"},
                             sysinfo=dict(SYSINFO), target=target(), commit=commit, label="main")
    store.finish_run(run_id, status="complete", columns={"ticks": (utime + stime), "utime_ns": utime,
                                                         "stime_ns": stime},
                     probe_header={"batch": 1, "timer": {"hz": 1e9}})
    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(started_at=moment))
    return run_id


def planted_branch(store: Store, control_job: bool) -> tuple[list[object], list[dict[str, object]], list[str]]:
    text = JOB + ("control:\n  cmd: /opt/ref/prog\n" if control_job else "")
    watched, reference = expand_job(text, cpu_count=2)
    commits = fake_commits(COMMITS, seed=5)
    rows = []
    moment = START
    for k, sha in enumerate(commits):
        machine = 1.05 if k >= MACHINE_AT else 1.0  # the machine slows for everything from commit 8
        version = 1.03 if k >= STEP_AT else 1.0  # commit 14 adds 3 % to the program
        ids: dict[str, list[int]] = {watched.id: [], reference.id: []}
        for trial in range(3):  # each control run 5 s after its watched run, the next pair 20 s later
            moment += timedelta(seconds=20)
            seed = 100 * k + trial
            ids[watched.id].append(plant_run(store, "./prog", sha, 20e6 * machine * version, moment, seed))
            ids[reference.id].append(plant_run(store, "/opt/ref/prog", sha, 15e6 * machine,
                                               moment + timedelta(seconds=5), seed + 7))
        rows.append({"sha": sha, "state": "measured", "run_ids": ids})
    return [watched, reference], rows, commits


def test_a_branch_series_divided_by_the_control_steps_only_where_the_version_does(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    instances, rows, commits = planted_branch(store, control_job=True)
    (found,) = branch_series(store.engine, instances, rows, commits, watch_id=1)  # the control is not judged
    assert found.instance.params == {"cmd": "./prog"} and found.controlled and found.metric == COMMAND_METRIC
    points = found.series.points
    assert [p.commit for p in points] == [c for c in commits for _ in range(3)]  # first-parent order, 3 runs each
    expected = []  # each run over the control run of its commit nearest in time: the one 5 s after it
    for row in rows:
        runs = dict(row["run_ids"])  # type: ignore[arg-type]
        for mine, ref in zip(*runs.values(), strict=True):
            cpu = [store.load_samples(i) for i in (mine, ref)]
            medians = [float(np.median(c["utime_ns"].astype(float) + c["stime_ns"].astype(float))) for c in cpu]
            expected.append(medians[0] / medians[1])
    assert [p.value for p in points] == pytest.approx(expected)
    (change,) = found.history.change_points
    good, bad = found.range_of(change)
    assert commits.index(good) < STEP_AT <= commits.index(bad)
    assert change.verdict == "regression" and change.change.change_pct == pytest.approx(3.0, abs=0.5)


def test_without_a_control_the_machine_s_shift_is_a_candidate_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    instances, rows, commits = planted_branch(store, control_job=False)
    found = {f.instance.params["cmd"]: f for f in branch_series(store.engine, instances, rows, commits, watch_id=1)}
    watched = found["./prog"]
    assert not watched.controlled
    starts = sorted(commits.index(watched.range_of(c)[1]) for c in watched.history.change_points)
    assert MACHINE_AT in starts and STEP_AT in starts
    # a commit measured on another branch only, or not measured, is not a point
    partial = branch_series(store.engine, instances, rows, commits[:10], watch_id=1)
    assert {p.commit for p in partial[0].series.points} == set(commits[:10])
