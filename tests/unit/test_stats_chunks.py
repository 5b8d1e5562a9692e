"""A run's samples in consecutive chunks: numpy's split and percentiles are the reference."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.stats.chunks import chunk_summaries


@pytest.mark.parametrize(("n", "chunks"), [(2000, 4), (2003, 4), (7, 10), (1, 3), (10_000, 17)])
def test_chunks_are_numpys_split_with_its_percentiles(n: int, chunks: int) -> None:
    values = np.random.default_rng(n).lognormal(6, 0.3, n)
    found = chunk_summaries(values, chunks)
    parts = np.array_split(values, min(chunks, n))
    assert len(found) == len(parts)
    first = 0
    for chunk, part in zip(found, parts, strict=True):
        assert (chunk.first, chunk.last, chunk.n) == (first, first + part.size - 1, part.size)
        assert chunk.median == pytest.approx(np.percentile(part, 50), rel=1e-12)
        assert (chunk.low, chunk.high) == pytest.approx(tuple(np.percentile(part, [25, 75])), rel=1e-12)
        assert chunk.mean == pytest.approx(part.mean(), rel=1e-12)
        first += part.size
    assert first == n


def test_bad_chunk_count() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        chunk_summaries([1.0, 2.0], 0)
