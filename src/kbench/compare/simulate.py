"""Seeded synthetic trial streams for checking the comparison's error rates (tests, benchmarks).

A stream is a sequence of pairs; pair k occupies measurement slots 2k and 2k+1,
and within each pair the base trial goes first or second at random (the
randomised interleaving the engine uses), or always first. Trial statistic of
the trial in slot t:

    level * exp(noise * Z) * (1 + drift_per_trial * t) * S * (1 + shift if new)

with Z standard normal (so ``noise`` is the relative noise, about the sd of the
log) and S = 1 + spike_size with probability spike_probability, else 1 (rare
slow trials: an interrupt storm, a migration). Pure given the generator.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def interleaved_pairs(
    rng: np.random.Generator,
    pairs: int,
    *,
    shift: float = 0.0,
    noise: float = 0.02,
    drift_per_trial: float = 0.0,
    spike_probability: float = 0.0,
    spike_size: float = 1.0,
    level: float = 1000.0,
    randomize_order: bool = True,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(base, new) trial statistics of ``pairs`` interleaved pairs (module docstring)."""
    base_second = rng.random(pairs) < 0.5 if randomize_order else np.zeros(pairs, dtype=bool)
    slot_base = 2 * np.arange(pairs) + base_second
    slot_new = 2 * np.arange(pairs) + ~base_second

    def trial(slots: NDArray[np.int64]) -> NDArray[np.float64]:
        spikes = np.where(rng.random(pairs) < spike_probability, 1.0 + spike_size, 1.0)
        values: NDArray[np.float64] = (
            level * np.exp(noise * rng.standard_normal(pairs)) * (1.0 + drift_per_trial * slots) * spikes
        )
        return values

    return trial(slot_base), trial(slot_new) * (1.0 + shift)
