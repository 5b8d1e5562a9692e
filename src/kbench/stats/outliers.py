"""Outliers by the modified z-score of Iglewicz & Hoaglin (1993).

Definition. With m the median and MAD the raw median absolute deviation,

    M_i = 0.6745 * (x_i - m) / MAD,   x_i is an outlier when |M_i| > 3.5

(constants ``MODIFIED_Z_FACTOR`` and ``MODIFIED_Z_OUTLIER``). The test is
evaluated as |x_i - m| > L with the limit L = 3.5 * MAD / 0.6745
(``deviation_limit``), which is the same for MAD > 0 and defines the
degenerate case: when MAD = 0 (more than half of the values equal
the median) every value different from the median is an outlier (|M_i| is
infinite) and values equal to it are not. All-equal data have no outliers.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.stats.percentiles import median_of_valid
from kbench.stats.thresholds import MODIFIED_Z_FACTOR, MODIFIED_Z_OUTLIER
from kbench.stats.validate import as_samples


def _center_and_mad(samples: NDArray[np.float64], center: float | None, mad: float | None) -> tuple[float, float]:
    m = median_of_valid(samples) if center is None else float(center)
    if mad is None:
        mad = median_of_valid(np.abs(samples - m), overwrite=True)
    return m, float(mad)


def deviation_limit(mad: float, threshold: float = MODIFIED_Z_OUTLIER) -> float:
    """L = threshold * MAD / 0.6745: values with |x - median| > L are outliers.

    ``summarize`` and ``outlier_mask`` both use this one expression, so their
    counts agree to the last bit.
    """
    return threshold * float(mad) / MODIFIED_Z_FACTOR


def modified_z_scores(
    values: ArrayLike, *, center: float | None = None, mad: float | None = None
) -> NDArray[np.float64]:
    """M_i = 0.6745 (x_i - median) / MAD for each value.

    With MAD = 0: +/-inf for values different from the median, 0 for values equal
    to it. ``center``/``mad`` may be passed when already known.
    """
    samples = as_samples(values)
    m, scale = _center_and_mad(samples, center, mad)
    deviation = MODIFIED_Z_FACTOR * (samples - m)
    if scale > 0:
        return deviation / scale
    return np.where(deviation == 0, 0.0, np.copysign(np.inf, deviation))


def outlier_mask(
    values: ArrayLike,
    *,
    threshold: float = MODIFIED_Z_OUTLIER,
    center: float | None = None,
    mad: float | None = None,
) -> NDArray[np.bool_]:
    """Boolean mask of outliers: |x_i - median| > ``deviation_limit(MAD, threshold)``."""
    samples = as_samples(values)
    m, scale = _center_and_mad(samples, center, mad)
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
