"""A run over time: its samples in consecutive chunks, each with its median and spread.

Seed 001's writev hunt found its regression by looking at one run in chunks of 500
samples: the first chunks were slower than the last (a cold cache), which the run's
overall mean hid. ``chunk_summaries`` splits the values, in sample order, into ``chunks``
consecutive chunks as equal as they can be (sizes differ by at most one, the larger ones
first, as ``numpy.array_split``), and describes each by type-7 quantiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from kbench.stats.percentiles import quantiles
from kbench.stats.validate import as_samples

SPREAD = (0.25, 0.75)
"""The spread shown around each chunk's median: the interquartile range."""


@dataclass(frozen=True)
class Chunk:
    """Samples ``first`` to ``last`` (inclusive, 0-based) of a run: their count, median,
    quartiles (``low``, ``high`` = type-7 p25, p75) and mean."""

    first: int
    last: int
    median: float
    low: float
    high: float
    mean: float

    @property
    def n(self) -> int:
        return self.last - self.first + 1

    def to_json(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last, "n": self.n, "median": self.median, "p25": self.low,
                "p75": self.high, "mean": self.mean}


def chunk_summaries(values: ArrayLike, chunks: int) -> list[Chunk]:
    """The values in ``chunks`` consecutive chunks (fewer when there are fewer values)."""
    if chunks < 1:
        raise ValueError(f"chunks must be at least 1, got {chunks}")
    samples = as_samples(values)
    found = []
    first = 0
    for part in np.array_split(samples, min(chunks, samples.size)):
        low, median, high = (float(q) for q in quantiles(part, [SPREAD[0], 0.5, SPREAD[1]]))
        found.append(Chunk(first, first + part.size - 1, median, low, high, float(part.mean())))
        first += part.size
    return found
