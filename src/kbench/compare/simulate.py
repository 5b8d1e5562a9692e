"""Seeded synthetic trial streams for checking the comparison's error rates (tests, benchmarks).

A stream is a sequence of pairs; pair k occupies measurement slots 2k and 2k+1,
and within each pair the base trial goes first or second at random (the
randomised interleaving the engine uses), or always first. Trial statistic of
the trial in slot t:

    level * exp(noise * Z) * (1 + drift_per_trial * t) * S * (1 + shift if new)

with Z standard normal (so ``noise`` is the relative noise, about the sd of the
log) and S = 1 + spike_size with probability spike_probability, else 1 (rare
slow trials: an interrupt storm, a migration). Pure given the generator.

``interleaved_blocks`` simulates the interleaved design instead: mirrored blocks of
slots, with drift, heavy tails, spikes and a machine that switches speed;
``look_until_done`` feeds such blocks to a ``PairedSequential`` look by look.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from kbench.compare.paired import PairedSequential
from kbench.compare.sequential import SequentialStep

LOOK_FRACTIONS = (0.2, 0.4, 0.6, 0.8, 1.0)
"""The engine's looks (``kbench.engine.interleaved.LOOK_FRACTIONS``) as shares of the simulated blocks."""


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


def interleaved_blocks(
    rng: np.random.Generator,
    blocks: int,
    *,
    shift: float = 0.0,
    noise: float = 0.005,
    tails: float | None = None,
    walk: float = 0.0,
    spike_probability: float = 0.0,
    spike_size: float = 0.5,
    flip_probability: float = 0.0,
    flip_size: float = 0.3,
    flip_persistent: bool = False,
    level: float = 1000.0,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(d, base slots, new slots) of ``blocks`` mirrored blocks (ABBA or BAAB at random).

    Slot t's value: level * exp(noise * Z_t + W_t) * M_t * S_t, times (1 + shift) on the new
    side, with Z standard normal (or Student t with ``tails`` degrees of freedom), W a
    random walk with steps of sd ``walk`` per slot (drift), S = 1 + spike_size with
    probability spike_probability, and M = 1 + flip_size in the machine's slow mode: each
    slot independently with probability flip_probability (a per-process mode, like
    getppid's), or, with ``flip_persistent``, a mode that switches with that probability
    per slot and stays (a machine in a slow phase). d per block as ``paired.block_log_ratios``.
    """
    slots = 4 * blocks
    z = rng.standard_t(tails, slots) if tails else rng.standard_normal(slots)
    drift = np.cumsum(walk * rng.standard_normal(slots))
    if flip_persistent:
        switches = rng.random(slots) < flip_probability
        slow = np.cumsum(switches) % 2 == 1
    else:
        slow = rng.random(slots) < flip_probability
    spikes = np.where(rng.random(slots) < spike_probability, 1.0 + spike_size, 1.0)
    values = level * np.exp(noise * z + drift) * np.where(slow, 1.0 + flip_size, 1.0) * spikes
    values = values.reshape(blocks, 4)
    abba = rng.random(blocks) < 0.5  # base in slots 0 and 3, else in 1 and 2
    base = np.where(abba[:, None], values[:, [0, 3]], values[:, [1, 2]])
    new = np.where(abba[:, None], values[:, [1, 2]], values[:, [0, 3]]) * (1.0 + shift)
    d: NDArray[np.float64] = np.log(new.mean(axis=1)) - np.log(base.mean(axis=1))
    return d, base.ravel(), new.ravel()


def look_until_done(
    comparison: PairedSequential,
    d: NDArray[np.float64],
    base: NDArray[np.float64],
    new: NDArray[np.float64],
    fractions: Sequence[float] = LOOK_FRACTIONS,
) -> SequentialStep:
    """Look at the first share of the blocks (and their two slots per side) at each fraction
    until ``comparison`` stops; the step of the look that stopped it, or of the last look."""
    step = None
    for fraction in fractions:
        k = max(1, round(fraction * d.size))
        step = comparison.look(d[:k], base[: 2 * k], new[: 2 * k], fraction)
        if step.done:
            break
    if step is None:
        raise ValueError("no look: fractions is empty")
    return step
