"""The noise floor of a comparison as the one sentence its report's parameters show."""

from __future__ import annotations

from kbench.engine.noise_floor import POWER, NoiseFloor


def noise_floor_text(floor: NoiseFloor) -> str:
    """``1.23% at 80% power with 10 trials per side (A/A calibration 4, sigma 0.52%)``, or what is missing."""
    if floor.calibration_id is None:
        return f"unknown: run `kbench calibrate {floor.benchmark}` to measure it"
    if floor.effect_pct is None or floor.trials is None:
        return f"calibration {floor.calibration_id} has no {100 * POWER:.0f}% power figure for trials"
    sigma = f", sigma {100 * floor.sigma_log:.2f}%" if floor.sigma_log is not None else ""
    return (f"{floor.effect_pct:.2f}% at {100 * POWER:.0f}% power with {floor.trials} trials per side "
            f"(A/A calibration {floor.calibration_id}{sigma})")
