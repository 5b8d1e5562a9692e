"""Histograms (linear and log2 bins), the empirical CDF and a compact CDF for plots.

Bin conventions (all histograms): bins are half-open [edge_i, edge_{i+1}) except
the last linear bin, which is closed [edge_{k-1}, edge_k] so that the maximum is
counted (numpy's convention). Counts always sum to n (plus ``zeros`` for log2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.stats.percentiles import quantiles
from kbench.stats.thresholds import COMPACT_CDF_POINTS, HISTOGRAM_MAX_AUTO_BINS
from kbench.stats.validate import as_samples


@dataclass(frozen=True, eq=False)
class Histogram:
    """Bin ``edges`` (k + 1 increasing values) and ``counts`` (k integers)."""

    edges: NDArray[np.float64]
    counts: NDArray[np.int64]
    method: str = ""


@dataclass(frozen=True, eq=False)
class Log2Histogram:
    """Bins [2**e, 2**(e+1)) for e = exponents[i]; ``edges`` are those powers of two.

    ``zeros`` counts the values equal to 0, which no power-of-two bin holds.
    ``exponents`` is empty (and edges is empty) when all values are 0.
    """

    edges: NDArray[np.float64]
    counts: NDArray[np.int64]
    exponents: NDArray[np.int64]
    zeros: int = 0


@dataclass(frozen=True, eq=False)
class Ecdf:
    """Empirical CDF F(t) = #{x_i <= t} / n as a right-continuous step function.

    ``values`` are the distinct sample values in increasing order and
    ``probabilities[i]`` = F(values[i]); F is 0 below values[0].
    """

    values: NDArray[np.float64]
    probabilities: NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class CompactCdf:
    """A few points of the CDF for drawing: ``values[i]`` = Q(probabilities[i]) (type 7)."""

    probabilities: NDArray[np.float64]
    values: NDArray[np.float64] = field(repr=False)


def freedman_diaconis_bins(values: ArrayLike, *, max_bins: int = HISTOGRAM_MAX_AUTO_BINS) -> int:
    """Automatic number of linear bins.

    Freedman-Diaconis: width h = 2 * IQR * n**(-1/3) (IQR from type-7
    quartiles), bins = ceil((max - min) / h). When the IQR is 0 it falls back to
    Sturges, ceil(log2 n) + 1. The result is clamped to [1, max_bins], because
    heavy-tailed latency data make Freedman-Diaconis ask for very many bins.
    """
    samples = as_samples(values)
    n = samples.size
    low, high = float(samples.min()), float(samples.max())
    if high == low:
        return 1
    q1, q3 = quantiles(samples, [0.25, 0.75])
    iqr = float(q3 - q1)
    sturges = math.ceil(math.log2(n)) + 1
    bins = math.ceil((high - low) / (2.0 * iqr * n ** (-1.0 / 3.0))) if iqr > 0 else sturges
    return int(max(1, min(bins, max_bins)))


def linear_histogram(values: ArrayLike, bins: int | None = None) -> Histogram:
    """Equal-width bins from min to max.

    ``bins`` given: that many bins. ``bins=None``: ``freedman_diaconis_bins``.
    If all values are equal, one bin [v - 0.5, v + 0.5] (numpy's convention).
    """
    samples = as_samples(values)
    if bins is None:
        count = freedman_diaconis_bins(samples)
        method = "freedman-diaconis"
    else:
        if bins < 1:
            raise ValueError(f"bins must be at least 1, got {bins}")
        count = int(bins)
        method = "fixed"
    low, high = float(samples.min()), float(samples.max())
    if high == low:
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, count + 1)
    counts, _ = np.histogram(samples, bins=edges)
    return Histogram(edges, counts.astype(np.int64), method)


def log2_histogram(values: ArrayLike) -> Log2Histogram:
    """Power-of-two bins [2**e, 2**(e+1)) from the smallest to the largest non-zero value.

    The exponent of each value is computed exactly (``np.frexp``), not with a
    floating-point log2, so values exactly at a power of two land in the bin
    that starts there. Empty bins between the extremes are kept (count 0).
    """
    samples = as_samples(values)
    positive = samples[samples > 0]
    zeros = int(samples.size - positive.size)
    if positive.size == 0:
        empty = np.array([], dtype=np.int64)
        return Log2Histogram(np.array([], dtype=np.float64), empty, empty, zeros)
    _, exponent = np.frexp(positive)  # x = m * 2**e with 0.5 <= m < 1
    floor_log2 = exponent.astype(np.int64) - 1
    first, last = int(floor_log2.min()), int(floor_log2.max())
    counts = np.bincount(floor_log2 - first, minlength=last - first + 1).astype(np.int64)
    exponents = np.arange(first, last + 1, dtype=np.int64)
    edges = np.ldexp(1.0, np.arange(first, last + 2))
    return Log2Histogram(edges, counts, exponents, zeros)


def ecdf(values: ArrayLike) -> Ecdf:
    """The empirical CDF at each distinct value (see ``Ecdf``). Sorts the data."""
    samples = as_samples(values)
    distinct, counts = np.unique(samples, return_counts=True)
    return Ecdf(distinct, np.cumsum(counts) / samples.size)


def cdf_at(values: ArrayLike, points: ArrayLike) -> NDArray[np.float64]:
    """F(t) = #{x_i <= t} / n at each of ``points`` (any finite or infinite numbers)."""
    samples = np.sort(as_samples(values))
    where = np.asarray(points, dtype=np.float64)
    if np.isnan(where).any():
        raise ValueError("points must not be NaN")
    return np.searchsorted(samples, where, side="right") / samples.size


def compact_cdf(values: ArrayLike, points: int = COMPACT_CDF_POINTS) -> CompactCdf:
    """``points`` quantiles at probabilities 0, 1/(points-1), ..., 1 (type 7).

    The first point is the minimum and the last the maximum. Needs points >= 2.
    """
    if points < 2:
        raise ValueError(f"a compact CDF needs at least 2 points, got {points}")
    probabilities = np.linspace(0.0, 1.0, points)
    return CompactCdf(probabilities, quantiles(values, probabilities))
