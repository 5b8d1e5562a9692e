"""History that does not overstate: runs on both sides, change points at commit boundaries, the
range of runs a change could start at, and series judged against a control.

Truth is what was planted: the step's run, the commits, the machine's shift. Coverage of the
range is counted over simulated series; the range's definition is checked against a brute
force over every split (numpy, not the code's cumulative sums)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from kbench.history.analysis import history_of
from kbench.history.changes import Change, Segment, detect
from kbench.history.control import NoControl, control_for, relative_to
from kbench.history.rules import (
    LOCATION_THRESHOLD,
    MIN_SEGMENT_RUNS,
    PENDING,
    judge,
    location_range,
    split_costs,
    welch_p,
)
from kbench.history.series import Point, Series
from kbench.store.db import Store
from tests.history.planting import fake_commits, plant_series

KBENCH = str(Path(sys.executable).parent / "kbench")
START = datetime(2026, 11, 1, 3, 0, tzinfo=UTC)


def series_of(values: np.ndarray, commits: list[str] | None = None, *, sid: str = "s1", metric: str = "m",
              machine: str = "box|cpu|2|1", start: datetime = START) -> Series:
    points = [
        Point(run_id=i + 1, started_at=start + timedelta(minutes=i), value=float(v), mean=float(v), stdev=0.0, n=10,
              kernel="6.1", commit=commits[i] if commits else None, label=None)
        for i, v in enumerate(values)
    ]
    return Series(id=sid, benchmark="command", params={}, metric=metric, unit="ns", direction="lower",
                  machine="box", machine_fingerprint=machine, target="local", points=points)


def noisy(n: int, seed: int, cv: float = 0.005) -> np.ndarray:
    return 100.0 * (1.0 + cv * np.random.default_rng(seed).standard_normal(n))


def judged(values: np.ndarray, commits: list[str] | None = None):  # type: ignore[no-untyped-def]
    series = series_of(values, commits)
    return history_of(series, detect(values))


# -- support: at least 3 runs on each side ---------------------------------------------------------------


def test_a_step_with_fewer_than_three_runs_after_it_is_pending_not_reported() -> None:
    values = noisy(32, seed=2)
    values[30:] *= 1.10  # 20 sigma: Otava finds it on two runs
    assert [c.index for c in detect(values)] == [30]
    history = judged(values)
    assert history.change_points == []
    (pending,) = history.pending
    assert pending.status == PENDING and pending.index == 30
    assert pending.change.after.n == 2 < MIN_SEGMENT_RUNS
    one_run = judged(values[:31])
    assert one_run.change_points == []


def test_the_pending_step_is_reported_once_it_has_three_runs() -> None:
    values = noisy(33, seed=7)
    values[30:] *= 1.10
    history = judged(values)
    assert history.pending == []
    (point,) = history.change_points
    assert point.index == 30 and point.status == "candidate"
    assert point.change.after.n == 3 and point.change.before.n == 30


def planted_changes(values: np.ndarray, indexes: list[int]) -> list[Change]:
    """Change points as a detector would hand them over (the rules are tested, not Otava)."""
    bounds = [0, *indexes, values.size]
    return [Change(index, 1e-6, Segment.of(values[bounds[i]:index]), Segment.of(values[index:bounds[i + 2]]))
            for i, index in enumerate(indexes)]


def test_a_blip_of_two_runs_between_long_segments_is_transient_and_never_reported() -> None:
    values = noisy(60, seed=3)
    values[30:32] *= 1.10  # two disturbed runs, then back
    result = judge(values, values, planted_changes(values, [30, 32]))
    assert result.candidates == [] and result.pending == []
    assert {j.change.index for j in result.transient} == {30, 32}


def test_a_real_step_next_to_a_blip_survives_the_blip_being_taken_away() -> None:
    values = noisy(80, seed=5)
    values[30:32] *= 1.10  # a blip
    values[50:] *= 1.04  # a real 8-sigma step
    result = judge(values, values, planted_changes(values, [30, 32, 50]))
    assert [j.change.index for j in result.candidates] == [50]
    kept = result.candidates[0].change
    assert kept.before.median == pytest.approx(float(np.median(values[:50])))  # the blip merged into "before"
    assert kept.after.median == pytest.approx(float(np.median(values[50:])))
    assert {j.change.index for j in result.transient} == {30, 32}


# -- versions: a change sits where the commit changes ---------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_with_three_runs_per_commit_a_change_sits_at_a_commit_boundary(seed: int) -> None:
    commits = [c for c in fake_commits(20, seed) for _ in range(3)]
    values = noisy(60, seed=seed, cv=0.01)
    values[36:] *= 1.02  # commit 12 (2 sigma per run)
    history = judged(values, commits)
    for point in [*history.change_points, *history.pending]:
        assert point.index % 3 == 0 and point.first_index % 3 == 0 and (point.last_index) % 3 == 0
        before, after = point.correlated.before.commit, point.correlated.after.commit
        assert before == commits[point.first_index - 1] and after == commits[point.last_index]
        assert before != after


def test_runs_of_one_commit_are_never_split() -> None:
    """The first run of commit 10 happens to be low: the best split over runs is inside commit 10,
    the best split over commits is at its start."""
    commits = [c for c in fake_commits(20, 1) for _ in range(3)]
    values = noisy(60, seed=11, cv=0.002)
    values[30:] *= 1.05
    values[30] = values[:30].mean()  # looks like "before"
    history = judged(values, commits)
    (point,) = history.change_points
    assert point.index == 30
    assert point.correlated.before.commit == commits[29] and point.correlated.after.commit == commits[30]


# -- the range of runs a change could start at -----------------------------------------------------------


def brute_force_range(values: np.ndarray, index: int) -> tuple[int, int]:
    """The same set as ``location_range`` over the whole series, by refitting every split with numpy."""
    n = values.size
    sse = {k: float(((values[:k] - values[:k].mean()) ** 2).sum() + ((values[k:] - values[k:].mean()) ** 2).sum())
           for k in range(1, n)}
    best = min(sse.values())
    sigma2 = best / (n - 2)
    inside = [k for k, v in sse.items() if (v - best) / sigma2 <= LOCATION_THRESHOLD]
    return min(min(inside), index), max(max(inside), index)


@pytest.mark.parametrize("seed", range(5))
def test_the_range_is_every_split_whose_fit_is_close_to_the_best(seed: int) -> None:
    values = noisy(40, seed=seed, cv=0.01)
    values[25:] *= 1.02
    ks, sse = split_costs(values, 0, 40)
    assert list(ks) == list(range(1, 40))
    best_k = int(ks[np.argmin(sse)])
    assert location_range(values, 0, 40, best_k, None) == brute_force_range(values, best_k)


@pytest.mark.parametrize(("sigmas", "least_coverage"), [(2.0, 0.93), (3.0, 0.96), (6.0, 0.99)])
def test_the_range_holds_the_planted_run_in_most_series(sigmas: float, least_coverage: float) -> None:
    """400 series per row, step at a random run; measured coverage 0.97 / 0.99 / 1.0 (the
    bounds are 3-4 binomial standard deviations below them)."""
    rng = np.random.default_rng(int(sigmas * 10))
    covered, widths = 0, []
    for _ in range(400):
        at = int(rng.integers(6, 34))
        values = rng.standard_normal(40)
        values[at:] += sigmas
        ks, sse = split_costs(values, 0, 40)
        best = int(ks[np.argmin(sse)])
        first, last = location_range(values, 0, 40, best, None)
        covered += first <= at <= last
        widths.append(last - first + 1)
    assert covered / 400 >= least_coverage
    if sigmas >= 6:
        assert np.mean(np.array(widths) == 1) >= 0.95  # a large step is placed at one run


def test_a_small_step_gets_a_range_of_several_commits_and_names_them_all() -> None:
    commits = fake_commits(40, 2)
    values = noisy(40, seed=21, cv=0.01)
    values[20:] *= 1.02  # 2 sigma
    history = judged(values, commits)
    (point,) = history.change_points
    assert point.first_index <= 20 <= point.last_index
    assert point.correlated.commit_range == f"{commits[point.first_index - 1]}..{commits[point.last_index]}"


# -- control ratio ---------------------------------------------------------------------------------------


def test_dividing_by_a_control_removes_the_machine_and_keeps_the_version() -> None:
    """The machine slows by 5 % from night 10 (both series); the version adds 3 % at night 20."""
    n = 30
    rng = np.random.default_rng(4)
    machine = np.where(np.arange(n) >= 10, 1.05, 1.0) * (1 + 0.01 * rng.standard_normal(n))  # shared noise too
    watched_values = 100.0 * machine * np.where(np.arange(n) >= 20, 1.03, 1.0) * (1 + 0.002 * rng.standard_normal(n))
    control_values = 50.0 * machine * (1 + 0.002 * rng.standard_normal(n))
    commits = fake_commits(n, 9)
    watched = series_of(watched_values, commits, sid="w")
    control = series_of(control_values, commits, sid="c", start=START + timedelta(seconds=20))
    assert 10 in {p.index for p in history_of(watched, detect(watched.values())).change_points}
    controlled = relative_to(watched, control)
    assert controlled.unpaired == []
    assert controlled.series.values() == pytest.approx(watched_values / control_values)
    assert controlled.series.unit == "ratio" and controlled.series.metric == "m/control"
    ratio_history = history_of(controlled.series, detect(controlled.series.values()))
    assert [p.index for p in ratio_history.change_points] == [20]
    assert ratio_history.change_points[0].verdict == "regression"


def test_a_run_pairs_with_the_control_run_of_its_own_commit_nearest_in_time() -> None:
    commits = fake_commits(4, 1)
    watched = series_of(np.array([10.0, 10.0, 10.0, 10.0]), commits, sid="w")
    # control: commit 0 twice (the second nearer), commit 2 missing, and a run of another commit nearer in time
    control_points = [
        Point(1, START - timedelta(hours=1), 2.0, 2.0, 0.0, 1, None, commits[0], None),
        Point(2, START + timedelta(seconds=1), 5.0, 5.0, 0.0, 1, None, commits[0], None),
        Point(3, START + timedelta(minutes=1, seconds=1), 4.0, 4.0, 0.0, 1, None, commits[1], None),
        Point(4, START + timedelta(minutes=2), 1.0, 1.0, 0.0, 1, None, commits[3], None),
        Point(5, START + timedelta(minutes=3, seconds=1), 8.0, 8.0, 0.0, 1, None, commits[3], None),
    ]
    control = Series("c", "command", {}, "m", "ns", "lower", "box", "box|cpu|2|1", "local", control_points)
    controlled = relative_to(watched, control)
    assert controlled.series.values() == pytest.approx([10 / 5, 10 / 4, 10 / 8])
    assert controlled.unpaired == [3]  # the run of commits[2]


def test_the_control_must_be_one_series_on_the_same_machine_and_target() -> None:
    watched = series_of(noisy(5, 1), sid="w")
    elsewhere = series_of(noisy(5, 2), sid="x", machine="other|cpu|2|1")
    with pytest.raises(NoControl, match="no control series on machine"):
        control_for(watched, [elsewhere])
    twins = [series_of(noisy(5, 3), sid="a"), series_of(noisy(5, 4), sid="b")]
    with pytest.raises(NoControl, match="selects 2 series"):
        control_for(watched, twins)
    assert control_for(watched, [watched, twins[0], elsewhere]).id == "a"


def test_history_control_on_stored_runs_finds_only_the_version_s_change(tmp_path: Path) -> None:
    """The issue's nightly trial: thirty nights, +3 % at night 20, the machine shifting on its own;
    `kbench history --control` divides by the unchanged copy measured each night."""
    db = tmp_path / "k.db"
    store = Store.open(f"sqlite:///{db}")
    n = 30
    rng = np.random.default_rng(12)
    machine = 1.0 + 0.03 * (rng.random(n) < 0.4)  # a second speed mode 3 % slower on 40 % of the nights
    commits = fake_commits(n, 3)
    watched = 20e6 * machine * np.where(np.arange(n) >= 20, 1.03, 1.0) * (1 + 0.002 * rng.standard_normal(n))
    control = 15e6 * machine * (1 + 0.002 * rng.standard_normal(n))
    plant_series(store, watched, benchmark="command", metric="command.cpu", params={"cmd": "./prog"}, commits=commits)
    plant_series(store, control, benchmark="command", metric="command.cpu", params={"cmd": "/opt/ref/prog"},
                 commits=commits, start=START + timedelta(seconds=30), seed=1)
    store.engine.dispose()
    ids = {}
    listed = json.loads(subprocess.run([KBENCH, "--db", str(db), "history", "command.cpu", "--json"],
                                       capture_output=True, text=True, check=True).stdout)
    for one in listed["series"]:
        ids[one["params"]["cmd"]] = one["id"]
    proc = subprocess.run([KBENCH, "--db", str(db), "history", "command.cpu", "--control", ids["/opt/ref/prog"],
                           "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (ratio,) = data["series"]
    assert ratio["unit"] == "ratio" and ratio["params"] == {"cmd": "./prog"}
    assert [p["value"] for p in ratio["points"]] == pytest.approx(list(watched / control), rel=1e-6)
    (change,) = ratio["change_points"]
    assert change["index"] == 20 and change["verdict"] == "regression"
    assert change["correlated"]["first_after"]["commit"] == commits[20] or change["range"]["first_index"] <= 20


def test_welch_p_is_scipys_welch_t_test() -> None:
    """rules.welch_p (the t tail of kbench.stats.distributions, no scipy import) against
    scipy.stats.ttest_ind(equal_var=False) on segments of unequal sizes and spreads."""
    from scipy.stats import ttest_ind

    rng = np.random.default_rng(36)
    for _ in range(300):
        n, m = (int(k) for k in rng.integers(2, 40, size=2))
        before = rng.normal(100.0, rng.uniform(0.1, 5.0), n)
        after = rng.normal(100.0 + rng.uniform(-3, 3), rng.uniform(0.1, 5.0), m)
        tested = np.concatenate([before, after])
        expected = float(ttest_ind(before, after, equal_var=False).pvalue)
        assert welch_p(tested, 0, n, n + m) == pytest.approx(expected, rel=1e-9, abs=1e-300)
