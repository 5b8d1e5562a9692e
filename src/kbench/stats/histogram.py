"""Histograms (linear and log2 bins), the empirical CDF and a compact CDF for plots.

Bin conventions (all histograms): bins are half-open [edge_i, edge_{i+1}) except
the last linear bin, which is closed [edge_{k-1}, edge_k] so that the maximum is
counted (numpy's convention). Counts always sum to n (plus ``zeros`` for log2).

Quantized samples (timer ticks divided by a batch: every value a whole number of one
step) get linear bins a whole number of steps wide, with edges half a step off the
values (``value_step``, ``bin_edges``): every bin then holds the same number of
possible values, instead of bins finer than the step alternating between full and
empty, or some bins holding one possible value more than their neighbours.
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


STEP_TOLERANCE = 1e-4
"""How far (in steps) a gap between distinct values may be from a whole number of steps
for the values to count as quantized: float rounding of ticks × constant is far below."""
STEP_PROBE = 100_000
"""The step is found among this many values, then checked against all of them."""


def value_step(values: ArrayLike) -> float | None:
    """The step q every value lies on (x_i = x_min + k_i q, k_i whole), or None.

    q is the smallest gap between distinct values (of the first ``STEP_PROBE`` values,
    then checked against every value); None when some value lies off that grid by more
    than ``STEP_TOLERANCE`` steps (the values are not quantized), or when there are fewer
    than 3 distinct values.
    """
    samples = as_samples(values)
    probe = np.unique(samples[:STEP_PROBE])
    if probe.size < 3:
        return None
    step = float(np.diff(probe).min())
    low = float(samples.min())
    if not _on_grid(samples, low, step):
        probe = np.unique(samples)
        step = float(np.diff(probe).min())
        if not _on_grid(samples, low, step):
            return None
    return step


def _on_grid(samples: NDArray[np.float64], low: float, step: float) -> bool:
    if not step > 0:
        return False
    multiples = (samples - low) / step
    return bool(np.all(np.abs(multiples - np.rint(multiples)) <= STEP_TOLERANCE))


def bin_edges(low: float, high: float, bins: int, step: float | None = None) -> NDArray[np.float64]:
    """Edges of about ``bins`` equal bins covering [low, high].

    Without ``step``: ``bins`` bins from low to high (one bin [v - 0.5, v + 0.5] when
    low == high). With the values' ``step`` (``value_step``, low on the grid): the bin
    width is the plain width rounded up to whole steps (at least one), the first edge half
    a step below low, and as many bins (at most ``bins`` + 1) as reach past high.
    """
    if bins < 1:
        raise ValueError(f"bins must be at least 1, got {bins}")
    if step is None or not step > 0:
        if high == low:
            low, high = low - 0.5, high + 0.5
        return np.linspace(low, high, bins + 1)
    steps_per_bin = max(1, math.ceil((high - low) / bins / step - STEP_TOLERANCE))
    width = steps_per_bin * step
    start = low - step / 2
    count = int((high - start) // width) + 1
    return start + width * np.arange(count + 1, dtype=np.float64)


def linear_histogram(values: ArrayLike, bins: int | None = None, *, quantized: bool = True) -> Histogram:
    """Equal-width bins from min to max.

    ``bins`` given: about that many bins. ``bins=None``: ``freedman_diaconis_bins``.
    If all values are equal, one bin [v - 0.5, v + 0.5] (numpy's convention). With
    ``quantized`` (the default) values on a step (``value_step``) get bins a whole number
    of steps wide (``bin_edges``): at most one bin more than asked.
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
    step = value_step(samples) if quantized and high > low else None
    edges = bin_edges(low, high, count, step)
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
