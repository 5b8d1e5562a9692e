"""The one number a trial contributes to a comparison.

Trials, not samples, are the unit of evidence: samples inside one run share its
cache state, frequency and placement, so they are correlated, and treating
them as independent makes every difference look significant. Each trial is
therefore reduced to one statistic and the comparison works on those.
"""

from __future__ import annotations

from numpy.typing import ArrayLike

from kbench.stats.percentiles import median_of_valid
from kbench.stats.validate import as_samples
from kbench.stats.warmup import steady_state_index


def trial_statistic(samples: ArrayLike) -> float:
    """Median of the steady-state part of one trial's samples, in their unit.

    Exactly: i = ``kbench.stats.steady_state_index(samples)`` (robust MSER-5; 0
    for short series or no warm-up), then the type-7 median of samples[i:]
    (the middle value, or the mean of the two middle values). The median, not
    the mean, because per-op latencies have rare huge spikes (interrupts).

    Raises ``ValueError`` for input ``kbench.stats.as_samples`` refuses (empty,
    NaN, infinite, negative, not 1-D).
    """
    values = as_samples(samples)
    start = steady_state_index(values)
    return median_of_valid(values[start:])
