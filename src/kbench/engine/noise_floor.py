"""The noise floor of a comparison: the smallest change the base side's latest A/A
calibration (``kbench calibrate``) says its trial budget detects with 80% power."""

from __future__ import annotations

from dataclasses import dataclass

from kbench.engine.compare_protocol import ComparisonOutcome
from kbench.store.db import Store

POWER = 0.8


@dataclass(frozen=True)
class NoiseFloor:
    """What the store knows of the noise floor of ``benchmark`` on ``target``.

    ``calibration_id`` is None when it was never calibrated there; ``effect_pct`` is None
    when the calibration has no figure for trials at ``POWER`` (an interleaved one gives
    blocks); otherwise ``effect_pct`` holds at ``trials`` trials per side, the budget of the
    calibration nearest the comparison's.
    """

    benchmark: str
    target: str
    calibration_id: int | None = None
    effect_pct: float | None = None
    trials: int | None = None
    sigma_log: float | None = None


def noise_floor(store: Store, benchmark: str, target: str, trials: int) -> NoiseFloor:
    """The noise floor of ``benchmark`` on ``target`` (a kernel spec, or ``local``) at ``trials`` per side."""
    calibration = store.latest_calibration(benchmark, target)
    if calibration is None:
        return NoiseFloor(benchmark, target)
    found = NoiseFloor(benchmark, target, int(calibration["id"]), sigma_log=float(calibration["sigma_log"]))
    rows = [row for row in calibration["mde"] if row.get("power") == POWER and "trials" in row]
    if not rows:
        return found
    row = min(rows, key=lambda r: abs(int(r["trials"]) - trials))
    return NoiseFloor(benchmark, target, found.calibration_id, float(row["effect_pct"]), int(row["trials"]),
                      found.sigma_log)


def comparison_noise_floor(store: Store, outcome: ComparisonOutcome) -> NoiseFloor:
    """The noise floor of a trials comparison: its base side's, at the most trials a side had."""
    base = outcome.sides[0].side
    trials = max(len(side.runs) for side in outcome.sides)
    return noise_floor(store, base.benchmark.name, base.kernel or "local", trials)
