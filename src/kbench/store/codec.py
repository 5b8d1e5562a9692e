"""Raw sample arrays to bytes and back: little-endian, in order, zlib-compressed."""

from __future__ import annotations

import zlib

import numpy as np

CODEC = "zlib"
# Level 1: per-sample timings are noisy in their low bits, so higher levels buy a few
# percent of space for several times the CPU (see benchmarks/store_ingest.py).
ZLIB_LEVEL = 1


def encode_array(values: np.ndarray) -> tuple[str, bytes]:
    """Return (dtype string, compressed bytes) for a 1-D array, keeping its order."""
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {values.shape}")
    little = values.astype(values.dtype.newbyteorder("<"), copy=False)
    return little.dtype.str, zlib.compress(little.tobytes(), ZLIB_LEVEL)


def decode_array(dtype: str, codec: str, data: bytes, count: int) -> np.ndarray:
    """Inverse of encode_array; checks the element count."""
    if codec != CODEC:
        raise ValueError(f"unknown sample codec {codec!r}")
    values = np.frombuffer(zlib.decompress(data), dtype=np.dtype(dtype))
    if values.size != count:
        raise ValueError(f"sample blob holds {values.size} values, expected {count}")
    return values
