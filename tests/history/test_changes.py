"""Change points of planted series: steps of 1–5 %, spikes, drift, mode flips, A/A.

Expected positions are the planted ones; before/after/change are checked against numpy on
the planted segments and the significance against an independent test (scipy's
Mann-Whitney U on the same segments)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from kbench.history import changes
from kbench.history.changes import DetectionSettings, detect, detect_many
from kbench.procfs import is_living


def noise(n: int, seed: int, cv: float = 0.001, level: float = 100.0) -> np.ndarray:
    return level * (1.0 + cv * np.random.default_rng(seed).standard_normal(n))


def spiky(values: np.ndarray, seed: int, rate: float = 0.02) -> np.ndarray:
    """Disturbed runs: ``rate`` of the points 10–50 % too high."""
    rng = np.random.default_rng(seed + 1000)
    hit = rng.random(values.size) < rate
    out = values.copy()
    out[hit] *= 1.0 + rng.uniform(0.10, 0.50, hit.sum())
    return out


@pytest.mark.parametrize("step_pct", [1, 2, 3, 5])
@pytest.mark.parametrize("seed", range(5))
def test_a_step_is_found_at_the_run_where_it_starts(step_pct: int, seed: int) -> None:
    values = noise(60, seed)
    values[40:] *= 1 + step_pct / 100
    found = detect(values)
    assert [c.index for c in found] == [40]
    change = found[0]
    assert change.before.median == pytest.approx(np.median(values[:40]))
    assert change.after.median == pytest.approx(np.median(values[40:]))
    assert change.before.n == 40 and change.after.n == 20
    assert change.after.stdev == pytest.approx(np.std(values[40:], ddof=1))
    assert change.change_pct == pytest.approx(100 * (np.median(values[40:]) / np.median(values[:40]) - 1))
    assert change.change_pct == pytest.approx(step_pct, abs=0.3)
    assert change.p_value < DetectionSettings().max_pvalue
    assert mannwhitneyu(values[:40], values[40:]).pvalue < 1e-4


def test_a_and_a_series_of_a_month_of_nightly_runs_rarely_have_a_change_point() -> None:
    """200 series of 30 runs with nothing planted: about 2 % get a (false) change point at p < 0.001."""
    flagged = sum(bool(detect(noise(30, seed, cv=0.005))) for seed in range(200))
    assert flagged <= 10


def test_false_change_points_on_long_a_and_a_series_are_rare() -> None:
    """At the default p-value the measured rate is about 0.1 per 100 points (docs/history.md)."""
    total = sum(len(detect(noise(300, seed, cv=0.005))) for seed in range(20))
    assert total / (20 * 300) * 100 <= 0.5


def test_false_change_points_under_spikes_and_drift_stay_below_one_per_100_points() -> None:
    """The issue's bound, on 20 series of 300 points: 2 % disturbed runs and a drift of 1.5 %
    over the series (5 % per 1,000 runs)."""
    total = 0
    for seed in range(20):
        values = spiky(noise(300, seed, cv=0.005) * np.linspace(1.0, 1.015, 300), seed)
        total += len(detect(values))
    assert total / (20 * 300) * 100 <= 1.0


def test_spikes_neither_make_nor_hide_a_step() -> None:
    values = noise(80, 3)
    values[50:] *= 1.03
    values[[10, 30, 47, 52, 70]] *= 1.4  # disturbed runs, two of them next to the step
    assert [c.index for c in detect(values)] == [50]
    # On the values themselves the same spikes cost the t-test its power:
    assert 50 not in [c.index for c in detect(values, DetectionSettings(winsorize=None))]


def test_a_2pct_step_is_found_five_points_after_it() -> None:
    """Run-to-run noise 0.5 %: found in 94 % of simulated series (docs/history.md); this one is."""
    values = noise(105, 11, cv=0.005)
    values[100:] *= 1.02
    assert [c.index for c in detect(values)] == [100]


def test_a_mode_flip_and_back_gives_two_change_points() -> None:
    """A VM that flips from one speed mode to another (≈164 → ≈216 ns) and back."""
    values = noise(90, 5, level=164.0)
    values[30:60] = noise(30, 6, level=216.0)
    found = detect(values)
    assert [c.index for c in found] == [30, 60]
    assert found[0].change_pct == pytest.approx(100 * (216 / 164 - 1), abs=1.0)
    assert found[1].before.median == pytest.approx(np.median(values[30:60]))


def test_runs_drawn_from_two_modes_at_random_are_no_change() -> None:
    rng = np.random.default_rng(8)
    values = np.where(rng.random(200) < 0.3, 216.0, 164.0) * (1 + 0.003 * rng.standard_normal(200))
    assert detect(values) == []


def test_short_constant_and_bad_series() -> None:
    assert detect([1.0, 2.0, 3.0]) == []
    assert detect(np.full(50, 7.0)) == []
    with pytest.raises(ValueError, match="finite"):
        detect([1.0, float("nan"), 2.0, 3.0, 4.0])
    with pytest.raises(ValueError, match="window"):
        DetectionSettings(window=2)


def test_many_series_on_worker_processes_match_one_process(monkeypatch: pytest.MonkeyPatch) -> None:
    series = []
    for seed in range(12):
        values = noise(150, seed)
        values[seed * 10 + 20:] *= 1.04
        series.append(values)
    alone = detect_many(series, workers=1)
    monkeypatch.setattr(changes, "PARALLEL_MIN_POINTS", 1)
    shared = detect_many(series, workers=2)
    assert shared == alone
    assert all(seed * 10 + 20 in [c.index for c in found] for seed, found in enumerate(alone))


WORKERS_SCRIPT = """
import multiprocessing, threading, time
import numpy as np
from kbench.procfs import is_living
from kbench.history import changes
changes.PARALLEL_MIN_POINTS = 1
def report():
    while len(multiprocessing.active_children()) < 2:
        time.sleep(0.05)
    print(" ".join(str(p.pid) for p in multiprocessing.active_children()), flush=True)
threading.Thread(target=report, daemon=True).start()
changes.detect_many([np.random.default_rng(i).normal(100, 1, 3000) for i in range(2000)], workers=2)
"""


def _alive(pid: int) -> bool:
    return is_living(pid)


def test_worker_processes_die_with_the_process_that_started_them() -> None:
    import signal
    import subprocess
    import sys
    import time

    parent = subprocess.Popen([sys.executable, "-c", WORKERS_SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        workers = [int(pid) for pid in parent.stdout.readline().split()]
        assert len(workers) == 2 and all(_alive(pid) for pid in workers)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=30)
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(pid) for pid in workers)
