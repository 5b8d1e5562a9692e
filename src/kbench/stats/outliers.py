"""Outliers by the modified z-score of Iglewicz & Hoaglin (1993).

Definition. With m the median and MAD the raw median absolute deviation,

    M_i = 0.6745 * (x_i - m) / MAD,   x_i is an outlier when |M_i| > 3.5

(constants ``MODIFIED_Z_FACTOR`` and ``MODIFIED_Z_OUTLIER``). The test is
evaluated as |x_i - m| > L with the limit L = 3.5 * MAD / 0.6745
(``deviation_limit``).

MAD = 0 (more than half of the values equal the median) happens to quantized
samples whose spread is below the timer's resolution: the MAD then says "less
than one step", not "no spread at all". The scale used instead is the smallest
non-zero |x_i - m| (``outlier_scale``): the data's resolution at its centre, one
timer quantum for quantized samples. So a value one or two quanta off the median
is not an outlier; one 3.5 / 0.6745 ≈ 5.2 quanta off is. All-equal data have no
outliers (every deviation is 0).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.stats.percentiles import median_of_valid
from kbench.stats.thresholds import MODIFIED_Z_FACTOR, MODIFIED_Z_OUTLIER
from kbench.stats.validate import as_samples


def _center_and_scale(
    samples: NDArray[np.float64], center: float | None, mad: float | None
) -> tuple[float, float]:
    m = median_of_valid(samples) if center is None else float(center)
    deviations = np.abs(samples - m)
    if mad is None:
        mad = median_of_valid(deviations.copy(), overwrite=True)
    return m, outlier_scale(float(mad), deviations)


def outlier_scale(mad: float, abs_deviations: NDArray[np.float64]) -> float:
    """The scale of the modified z-score: the MAD, or when it is 0 the smallest non-zero
    of ``abs_deviations`` (|x_i - median|), the data's resolution at its centre; 0 when
    every deviation is 0."""
    if mad > 0:
        return mad
    nonzero = abs_deviations[abs_deviations > 0]
    return float(nonzero.min()) if nonzero.size else 0.0


def deviation_limit(mad: float, threshold: float = MODIFIED_Z_OUTLIER) -> float:
    """L = threshold * MAD / 0.6745: values with |x - median| > L are outliers.

    ``summarize`` and ``outlier_mask`` both use this one expression, so their
    counts agree to the last bit.
    """
    return threshold * float(mad) / MODIFIED_Z_FACTOR


def modified_z_scores(
    values: ArrayLike, *, center: float | None = None, mad: float | None = None
) -> NDArray[np.float64]:
    """M_i = 0.6745 (x_i - median) / scale for each value, the scale by ``outlier_scale``
    (the MAD, or the smallest non-zero deviation when the MAD is 0); all 0 for all-equal
    data. ``center``/``mad`` may be passed when already known.
    """
    samples = as_samples(values)
    m, scale = _center_and_scale(samples, center, mad)
    deviation = MODIFIED_Z_FACTOR * (samples - m)
    if scale > 0:
        return deviation / scale
    return np.zeros_like(deviation)


def outlier_mask(
    values: ArrayLike,
    *,
    threshold: float = MODIFIED_Z_OUTLIER,
    center: float | None = None,
    mad: float | None = None,
) -> NDArray[np.bool_]:
    """Boolean mask of outliers: |x_i - median| > ``deviation_limit(scale, threshold)``, the
    scale by ``outlier_scale``."""
    samples = as_samples(values)
    m, scale = _center_and_scale(samples, center, mad)
    return np.abs(samples - m) > deviation_limit(scale, threshold)


def outlier_count(
    values: ArrayLike,
    *,
    threshold: float = MODIFIED_Z_OUTLIER,
    center: float | None = None,
    mad: float | None = None,
) -> int:
    """Number of outliers by ``outlier_mask``."""
    return int(np.count_nonzero(outlier_mask(values, threshold=threshold, center=center, mad=mad)))
