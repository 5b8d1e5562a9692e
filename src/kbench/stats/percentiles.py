"""Sample quantiles by one documented definition: Hyndman & Fan (1996) type 7.

Definition (for sorted samples x_(1) <= ... <= x_(n) and probability p in [0, 1]):

    h = (n - 1) * p          (0-based position)
    Q(p) = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)])

with x 0-based and the second term absent when floor(h) = n - 1 (p = 1).
This is numpy's default ``method="linear"`` and R's default ``quantile(type=7)``.
Q(0) is the minimum, Q(1) the maximum, and for n = 1 every quantile is the value.
The median is Q(0.5): the middle value for odd n, the mean of the two middle
values for even n.

Only the needed order statistics are selected (``np.partition``), never a full
sort, so several quantiles of 10**7 samples cost one selection pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.stats.validate import as_samples


def type7_positions(n: int, probabilities: ArrayLike) -> tuple[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]]:
    """Return (lower index, upper index, fraction) of type-7 quantiles for n samples.

    Indices are 0-based positions in the sorted sample; Q(p) interpolates between
    them with the fraction (see the module docstring). Raises ``ValueError`` for
    n < 1 or a probability outside [0, 1].
    """
    if n < 1:
        raise ValueError(f"need at least one sample, got n={n}")
    p = np.atleast_1d(np.asarray(probabilities, dtype=np.float64))
    if not np.all((p >= 0.0) & (p <= 1.0)):
        bad = p[~((p >= 0.0) & (p <= 1.0))][0]
        raise ValueError(f"probabilities must lie in [0, 1], got {float(bad)!r}")
    h = (n - 1) * p
    lower = np.floor(h).astype(np.intp)
    upper = np.minimum(lower + 1, n - 1)
    fraction = h - lower
    return lower, upper, fraction


def interpolate(
    lower_values: NDArray[np.float64],
    upper_values: NDArray[np.float64],
    fraction: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Linear interpolation a + t * (b - a), evaluated from the nearer end.

    For t >= 0.5 the equivalent b - (1 - t) * (b - a) is used, which keeps the
    result within [a, b] and exact at t = 1 despite rounding.
    """
    a = np.asarray(lower_values, dtype=np.float64)
    b = np.asarray(upper_values, dtype=np.float64)
    t = np.asarray(fraction, dtype=np.float64)
    difference = b - a
    return np.where(t < 0.5, a + t * difference, b - (1.0 - t) * difference)


def order_statistics(
    samples: NDArray[np.float64], indices: ArrayLike, *, overwrite: bool = False
) -> NDArray[np.float64]:
    """Return the values at 0-based ``indices`` of the sorted ``samples``.

    One ``np.partition`` with all indices as pivots (O(n) in practice). The input
    is left untouched unless ``overwrite`` is true, in which case it is
    partitioned in place (saves a copy; the multiset of values is unchanged).
    ``samples`` must already be valid (see ``as_samples``).
    """
    wanted = np.asarray(indices, dtype=np.intp)
    # Repeated pivots are fine for np.partition; np.unique would import numpy.ma (~10 ms of start-up).
    if overwrite:
        samples.partition(wanted)
        arranged = samples
    else:
        arranged = np.partition(samples, wanted)
    return arranged[wanted]


def quantiles(values: ArrayLike, probabilities: Sequence[float] | ArrayLike) -> NDArray[np.float64]:
    """Type-7 quantiles of ``values`` at ``probabilities`` (each in [0, 1])."""
    samples = as_samples(values)
    lower, upper, fraction = type7_positions(samples.size, probabilities)
    selected = order_statistics(samples, np.concatenate([lower, upper]))
    k = lower.size
    return interpolate(selected[:k], selected[k:], fraction)


def percentiles(values: ArrayLike, percents: Sequence[float] | ArrayLike) -> NDArray[np.float64]:
    """Type-7 percentiles of ``values`` at ``percents`` (each in [0, 100]).

    Same as ``quantiles(values, percents / 100)``; matches
    ``np.percentile(values, percents)`` (method "linear").
    """
    return quantiles(values, np.asarray(percents, dtype=np.float64) / 100.0)


def median(values: ArrayLike) -> float:
    """Type-7 median: the middle value (odd n) or the mean of the two middle values."""
    return float(quantiles(values, [0.5])[0])


def median_of_valid(samples: NDArray[np.float64], *, overwrite: bool = False) -> float:
    """Median of an already validated array (no checks; see ``order_statistics``)."""
    lower, upper, fraction = type7_positions(samples.size, [0.5])
    selected = order_statistics(samples, [lower[0], upper[0]], overwrite=overwrite)
    return float(interpolate(selected[:1], selected[1:], fraction)[0])
