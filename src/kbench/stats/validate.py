"""Turn caller input into the one array type the statistics work on, or refuse it.

Every public function of ``kbench.stats`` that takes samples calls ``as_samples``
first, so the rules below are the input contract of the whole package.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def as_samples(values: ArrayLike) -> NDArray[np.float64]:
    """Return ``values`` as a 1-D float64 array of valid samples.

    Valid samples are finite and non-negative (they are durations or counts).
    The input is not modified; when it is already a 1-D float64 array it is
    returned as is (no copy), otherwise it is converted. Integers above 2**53
    lose precision in the conversion to float64.

    Raises ``ValueError`` with a specific message for: input that is not
    numeric, input that is not one-dimensional, empty input, and the first
    NaN, +inf/-inf or negative value (the message names its index and value).
    """
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"samples must be numbers: {error}") from None
    if array.ndim != 1:
        raise ValueError(f"samples must be a one-dimensional sequence, got an array of shape {array.shape}")
    if array.size == 0:
        raise ValueError("samples are empty: at least one value is needed")
    # Fast path without temporaries: min/max propagate NaN, so "min >= 0 and
    # max < inf" holds exactly when every value is finite and non-negative.
    if array.min() >= 0 and array.max() < np.inf:
        return array
    valid = (array >= 0) & (array < np.inf)  # False for NaN, +/-inf and negatives
    index = int(np.flatnonzero(~valid)[0])
    _check_one(index, float(array[index]))
    raise AssertionError("unreachable: an invalid value was expected")  # pragma: no cover


def _check_one(index: int, value: float) -> None:
    if not np.isfinite(value):
        raise ValueError(f"samples must be finite: values[{index}] is {value!r}")
    if value < 0:
        raise ValueError(f"samples must be non-negative: values[{index}] is {value!r}")
