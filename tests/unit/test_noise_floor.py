"""The noise floor a trials comparison reports, from calibrations in a real SQLite store."""

from __future__ import annotations

from pathlib import Path

from kbench.engine.noise_floor import NoiseFloor, noise_floor
from kbench.report.comparison.noise_floor import noise_floor_text
from kbench.store.db import Store

ROWS = [
    {"n": 5, "trials": 5, "power": 0.8, "effect_pct": 3.0},
    {"n": 10, "trials": 10, "power": 0.8, "effect_pct": 2.0},
    {"n": 10, "trials": 10, "power": 0.95, "effect_pct": 2.7},
    {"n": 20, "trials": 20, "power": 0.8, "effect_pct": 1.25},
]


def _calibrate(store: Store, mde: list[dict[str, float]], *, target: str = "local", sigma: float = 0.0123) -> int:
    return store.save_calibration(benchmark="syscall.getppid", metric="syscall.getppid.latency", target=target,
                                  params={}, trials={}, run_ids=[], sigma_log=sigma, mde=mde)


def test_the_latest_calibration_of_the_target_at_the_nearest_trial_budget(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    _calibrate(store, [{"trials": 10, "power": 0.8, "effect_pct": 9.0}])  # older: not used
    latest = _calibrate(store, ROWS)
    _calibrate(store, [{"trials": 10, "power": 0.8, "effect_pct": 7.0}], target="deb:6.1.0-56")  # another target

    floor = noise_floor(store, "syscall.getppid", "local", 9)
    assert floor == NoiseFloor("syscall.getppid", "local", latest, 2.0, 10, 0.0123)
    assert noise_floor_text(floor) == (
        f"2.00% at 80% power with 10 trials per side (A/A calibration {latest}, sigma 1.23%)"
    )
    assert noise_floor(store, "syscall.getppid", "local", 16).trials == 20  # |16-20| < |16-10|
    assert noise_floor(store, "syscall.getppid", "local", 2).effect_pct == 3.0
    assert noise_floor(store, "syscall.getppid", "deb:6.1.0-56", 10).effect_pct == 7.0


def test_what_is_missing_is_said(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    never = noise_floor(store, "syscall.getppid", "local", 10)
    assert never == NoiseFloor("syscall.getppid", "local")
    assert noise_floor_text(never) == "unknown: run `kbench calibrate syscall.getppid` to measure it"
    blocks_only = _calibrate(store, [{"n": 40, "blocks": 40, "power": 0.8, "effect_pct": 0.5}])
    floor = noise_floor(store, "syscall.getppid", "local", 10)
    assert floor.calibration_id == blocks_only and floor.effect_pct is None
    assert noise_floor_text(floor) == f"calibration {blocks_only} has no 80% power figure for trials"
