"""Measures of spread: sample standard deviation and median absolute deviation."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from kbench.stats.percentiles import median_of_valid
from kbench.stats.thresholds import MAD_TO_SIGMA
from kbench.stats.validate import as_samples


def sample_stdev(values: ArrayLike) -> float:
    """Sample standard deviation sqrt(sum((x - mean)**2) / (n - 1)) (ddof=1).

    Defined as 0.0 for n = 1 (one value shows no spread) instead of NaN, so that
    summaries stay finite and serialisable; n is always reported next to it.
    """
    samples = as_samples(values)
    if samples.size == 1:
        return 0.0
    return float(np.std(samples, ddof=1))


def mad(values: ArrayLike, *, center: float | None = None) -> float:
    """Raw median absolute deviation: median(|x_i - m|), m = the median of x.

    ``center`` replaces m when the caller already has it. Medians are type 7
    (mean of the two middle values for even n). Not scaled: multiply by
    ``MAD_TO_SIGMA`` (or call ``mad_scaled``) for a normal-consistent sigma.
    """
    samples = as_samples(values)
    m = median_of_valid(samples) if center is None else float(center)
    return median_of_valid(np.abs(samples - m), overwrite=True)


def mad_scaled(values: ArrayLike, *, center: float | None = None) -> float:
    """``MAD_TO_SIGMA`` (1.4826) x raw MAD: estimates sigma for normal data."""
    return MAD_TO_SIGMA * mad(values, center=center)
