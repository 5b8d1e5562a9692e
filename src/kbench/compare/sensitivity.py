"""Method sensitivity: which configurations can each measurement method tell apart?

For k named configurations (e.g. "6.1 run 1", "6.1 run 2", "6.12"), each a set
of trial statistics, every pair gets two two-sided p-values: Kolmogorov-Smirnov
(``scipy.stats.ks_2samp``, method "auto": any difference in distribution) and
Mann-Whitney U (``kbench.compare.ranks``: a difference in location). Small p
between two runs of the same kernel (an A/A pair) means the method sees
differences that are not there - run-to-run offsets - which is as much part of
the table as its power to separate different kernels.

Matrices are symmetric (both tests are). The diagonal is a split-half A/A of
each configuration with itself: trials 0, 2, 4, ... against trials 1, 3, 5, ...
(with interleaved trials, halves taken at the same times). NaN where a test
cannot run: fewer than 1 valid trial on a side (2 for the diagonal), or
values that are not finite and positive.

Interleaved configurations (``paired_sensitivity_matrix``) are compared block by block
with the signed-rank test instead of Mann-Whitney, as ``kbench compare`` judges them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.compare.judge import ks_p_value
from kbench.compare.paired import block_log_ratios
from kbench.compare.ranks import mann_whitney
from kbench.compare.signed_ranks import signed_rank_test


@dataclass(frozen=True, eq=False)
class SensitivityMatrix:
    """names[i] labels row and column i; ks_p[i, j] and mwu_p[i, j] are the pair's p-values."""

    names: tuple[str, ...]
    ks_p: NDArray[np.float64]
    mwu_p: NDArray[np.float64]

    def pairs(self) -> list[tuple[str, str, float, float]]:
        """(name_i, name_j, ks_p, mwu_p) for i <= j, diagonal (split-half A/A) included."""
        k = len(self.names)
        return [
            (self.names[i], self.names[j], float(self.ks_p[i, j]), float(self.mwu_p[i, j]))
            for i in range(k)
            for j in range(i, k)
        ]

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "ks_p": self.ks_p.tolist(), "mwu_p": self.mwu_p.tolist()}


def _valid(values: ArrayLike) -> NDArray[np.float64] | None:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"trial statistics must be one-dimensional, got shape {array.shape}")
    if array.size == 0 or not np.all(np.isfinite(array) & (array > 0)):
        return None
    return array


def _p_values(a: NDArray[np.float64] | None, b: NDArray[np.float64] | None) -> tuple[float, float]:
    if a is None or b is None or a.size == 0 or b.size == 0:
        return float("nan"), float("nan")
    return ks_p_value(a, b), mann_whitney(a, b).p_value


def sensitivity_matrix(configs: Mapping[str, ArrayLike]) -> SensitivityMatrix:
    """KS and Mann-Whitney p-values for every pair of configurations (module docstring)."""
    names = tuple(configs)
    arrays = [_valid(configs[name]) for name in names]
    k = len(names)
    ks_p = np.full((k, k), np.nan)
    mwu_p = np.full((k, k), np.nan)
    for i in range(k):
        own = arrays[i]
        if own is not None and own.size >= 2:
            ks_p[i, i], mwu_p[i, i] = _p_values(own[0::2], own[1::2])
        for j in range(i + 1, k):
            ks_p[i, j], mwu_p[i, j] = _p_values(arrays[i], arrays[j])
            ks_p[j, i], mwu_p[j, i] = ks_p[i, j], mwu_p[i, j]
    return SensitivityMatrix(names, ks_p, mwu_p)


@dataclass(frozen=True, eq=False)
class PairedSensitivity:
    """names[i] labels row and column i; paired_p: signed-rank p off the diagonal (Mann-Whitney of
    even vs odd blocks on it); ks_p: Kolmogorov-Smirnov."""

    names: tuple[str, ...]
    ks_p: NDArray[np.float64]
    paired_p: NDArray[np.float64]

    def to_dict(self) -> dict[str, Any]:
        return {"names": list(self.names), "ks_p": self.ks_p.tolist(), "paired_p": self.paired_p.tolist()}


def paired_sensitivity_matrix(
    names: Sequence[str], blocks: Sequence[Sequence[Sequence[float]]], slots: Sequence[ArrayLike]
) -> PairedSensitivity:
    """Signed-rank and KS p-values for every pair of interleaved configurations.

    blocks[i][b]: the slot values of configuration i in block b (every configuration runs in
    every block, so any two form pairs block by block); slots[i]: all of i's slot values.
    Off the diagonal: the two-sided Wilcoxon signed-rank p of the block log-ratios of j
    against i (``kbench.compare.signed_ranks``), and KS on the slot values. The diagonal
    is the split-half A/A of the trial version: KS and Mann-Whitney of i's slots in
    even blocks against those in odd blocks (NaN below two blocks).
    """
    k = len(names)
    paired = np.full((k, k), np.nan)
    ks_p = np.full((k, k), np.nan)
    for i in range(k):
        if len(blocks[i]) >= 2:
            even = np.concatenate([np.asarray(b, dtype=np.float64) for b in blocks[i][0::2]])
            odd = np.concatenate([np.asarray(b, dtype=np.float64) for b in blocks[i][1::2]])
            ks_p[i, i], paired[i, i] = _p_values(_valid(even), _valid(odd))
        for j in range(i + 1, k):
            d = block_log_ratios(blocks[i], blocks[j])
            if d.size and np.all(np.isfinite(d)):
                paired[i, j] = paired[j, i] = signed_rank_test(d).p_value
            a, b = _valid(slots[i]), _valid(slots[j])
            if a is not None and b is not None:
                ks_p[i, j] = ks_p[j, i] = ks_p_value(a, b)
    return PairedSensitivity(tuple(names), ks_p, paired)


def copies_sensitivity_matrix(
    names: Sequence[str], copies: Sequence[Sequence[float]], slots: Sequence[ArrayLike]
) -> PairedSensitivity:
    """p-values for every pair of module builds measured as copies of each (``kbench.compare.placement``).

    copies[i]: the values of build i's copies (``copy_value``: median block log-ratio against one
    common copy); slots[i]: all slot values of i's copies. Off the diagonal: Student's pooled
    t-test p of the copies of j against those of i, so the spread between placements is part of
    the error, as ``compare --module`` judges builds; KS on the slot values. The diagonal is a
    split-half A/A: a build's odd-numbered copies against its even-numbered ones (t-test; NaN
    below three copies), KS of their slots (NaN: the slots are not kept per copy here).
    """
    from kbench.compare.placement import t_interval

    k = len(names)
    paired = np.full((k, k), np.nan)
    ks_p = np.full((k, k), np.nan)
    for i in range(k):
        own = np.asarray(copies[i], dtype=np.float64)
        if own.size >= 3 and np.all(np.isfinite(own)):
            paired[i, i] = t_interval(own[0::2], own[1::2], 0.05)[3]
        for j in range(i + 1, k):
            other = np.asarray(copies[j], dtype=np.float64)
            if min(own.size, other.size) >= 2 and np.all(np.isfinite(own)) and np.all(np.isfinite(other)):
                paired[i, j] = paired[j, i] = t_interval(own, other, 0.05)[3]
            a, b = _valid(slots[i]), _valid(slots[j])
            if a is not None and b is not None:
                ks_p[i, j] = ks_p[j, i] = ks_p_value(a, b)
    return PairedSensitivity(tuple(names), ks_p, paired)
