"""One metric's values: what a kind makes of a measurement, and what statistics and reports read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class MetricSeries:
    """The values of metric ``name`` (``<suite>.<test>.<stat>``) in ``unit``, in order.

    One value per sample (per-operation time), per iteration (a suite) or per interval
    (will-it-scale); ``direction`` says whether lower or higher is better.
    """

    name: str
    unit: str
    direction: str
    values: np.ndarray
