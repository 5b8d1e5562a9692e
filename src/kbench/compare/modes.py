"""Modes: do one side's measurements fall into separate clusters (a machine that switches speed)?

Some machines switch between speeds: on the development VM a getppid costs about 167 ns
in some processes and about 218 ns in others, and a CPU loop flips the same way. A
comparison that does not notice can build a confident verdict on trials that happened
to land in one mode on one side and in the other mode on the other.

Method, on the logarithms x of the values (so that spreads are relative), sorted:

1. Best two-way split: the split position that minimises the within-cluster sum of
   squares (the optimal 1-D 2-means split, from prefix sums), with at least
   ``MODE_MIN_COUNT`` values and ``MODE_MIN_FRACTION`` of them on each side - a few
   stray slow values are outliers, not a mode.
2. The split is kept when the clusters are clearly apart, measured in the pooled
   within-cluster sigma s = sqrt(within-cluster sum of squares / (n - 2)), floored at
   ``MODE_SIGMA_FLOOR`` (identical or quantized values have no spread but are not
   infinitely far from their neighbours):
   - the empty gap between them (smallest upper value minus largest lower value) is at
     least ``MODE_MIN_GAP_SIGMAS`` s, and
   - their medians differ by at least ``MODE_SEPARATION`` s (about Ashman's D; a
     normal sample's best split gives about 2.7) and by at least
     ``MODE_MIN_RELATIVE_GAP``.
   The pooled s uses every value, so a small cluster's chance tightness cannot fake a
   separation; heavy tails inflate s, which makes the rule more cautious, not less.
3. Each kept cluster is split again the same way (more than two modes).

Deterministic, no tuning by the data. Tests check that unimodal noise (normal,
heavy-tailed, with 5% outliers) is not called multimodal and that the VM's flips are.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.compare.thresholds import (
    MODE_MIN_COUNT,
    MODE_MIN_FRACTION,
    MODE_MIN_GAP_SIGMAS,
    MODE_MIN_RELATIVE_GAP,
    MODE_SEPARATION,
    MODE_SIGMA_FLOOR,
)
from kbench.compare.verdict import INCONCLUSIVE, REASON_MULTIMODAL, WARNING_MODES, Verdict


@dataclass(frozen=True, eq=False)
class Modes:
    """Clusters of one side's values, ascending.

    centres: the median of each cluster, in the values' unit. counts: values per
    cluster. labels: the cluster of each input value, in input order.
    """

    centres: tuple[float, ...]
    counts: tuple[int, ...]
    labels: NDArray[np.int64]

    @property
    def multimodal(self) -> bool:
        return len(self.centres) >= 2

    @property
    def fractions(self) -> tuple[float, ...]:
        total = sum(self.counts)
        return tuple(c / total for c in self.counts) if total else ()

    def describe(self, unit: str = "") -> str:
        """``2 modes: 167.1 ns (70%) and 218.4 ns (30%)``."""
        suffix = f" {unit}" if unit else ""
        shares = zip(self.centres, self.fractions, strict=True)
        parts = [f"{centre:.4g}{suffix} ({100 * share:.0f}%)" for centre, share in shares]
        joined = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return f"{len(parts)} mode{'s' if len(parts) != 1 else ''}: {joined}"

    def to_dict(self) -> dict[str, object]:
        return {"centres": list(self.centres), "counts": list(self.counts), "fractions": list(self.fractions)}


def _best_split(x: NDArray[np.float64], min_size: int) -> tuple[int, float] | None:
    """(i, within-cluster sum of squares) of the best 2-means split x[:i] | x[i:], both parts >= min_size."""
    n = x.size
    if n < 2 * min_size:
        return None
    prefix = np.concatenate([[0.0], np.cumsum(x)])
    prefix_sq = np.concatenate([[0.0], np.cumsum(x * x)])
    split = np.arange(min_size, n - min_size + 1)
    left_ss = prefix_sq[split] - prefix[split] ** 2 / split
    right_n = n - split
    right_ss = (prefix_sq[n] - prefix_sq[split]) - (prefix[n] - prefix[split]) ** 2 / right_n
    within = left_ss + right_ss
    best = int(np.argmin(within))
    return int(split[best]), max(float(within[best]), 0.0)


def _separated(lower: NDArray[np.float64], upper: NDArray[np.float64], within_ss: float) -> bool:
    sigma = max(math.sqrt(within_ss / max(lower.size + upper.size - 2, 1)), MODE_SIGMA_FLOOR)
    gap = float(upper[0] - lower[-1])
    distance = float(np.median(upper) - np.median(lower))
    return (
        gap >= MODE_MIN_GAP_SIGMAS * sigma
        and distance >= MODE_SEPARATION * sigma
        and distance >= math.log1p(MODE_MIN_RELATIVE_GAP)
    )


def _clusters(x: NDArray[np.float64], min_size: int) -> list[NDArray[np.float64]]:
    found = _best_split(x, min_size)
    if found is None or not _separated(x[: found[0]], x[found[0] :], found[1]):
        return [x]
    split = found[0]
    return _clusters(x[:split], min_size) + _clusters(x[split:], min_size)


def find_modes(values: ArrayLike) -> Modes:
    """The clusters of ``values`` (module docstring); positive finite values, any count.

    Raises ``ValueError`` for values that are not 1-D, finite and positive.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError("modes need a 1-D sequence of finite, positive values")
    if array.size == 0:
        return Modes((), (), np.zeros(0, dtype=np.int64))
    logs = np.log(array)
    order = np.argsort(logs, kind="stable")
    min_size = max(MODE_MIN_COUNT, math.ceil(MODE_MIN_FRACTION * array.size))
    clusters = _clusters(logs[order], min_size)
    labels_sorted = np.concatenate([np.full(c.size, k, dtype=np.int64) for k, c in enumerate(clusters)])
    labels = np.empty(array.size, dtype=np.int64)
    labels[order] = labels_sorted
    return Modes(
        centres=tuple(float(np.exp(np.median(c))) for c in clusters),
        counts=tuple(int(c.size) for c in clusters),
        labels=labels,
    )


def side_modes(base: ArrayLike, new: ArrayLike) -> dict[str, Modes]:
    """{"base": Modes, "new": Modes} for the sides whose valid values fall into two or more clusters."""
    found = {}
    for name, values in (("base", base), ("new", new)):
        array = np.asarray(values, dtype=np.float64)
        modes = find_modes(array[np.isfinite(array) & (array > 0)])
        if modes.multimodal:
            found[name] = modes
    return found


def mode_distance(modes: Modes) -> float:
    """How far apart the extreme modes are, as a log ratio: log(highest centre / lowest centre)."""
    return math.log(modes.centres[-1] / modes.centres[0]) if modes.multimodal else 0.0


def beyond_modes(ci_pct: tuple[float, float], found: dict[str, Modes]) -> bool:
    """Whether every change in the interval ``ci_pct`` (in %, excluding 0) is larger than the
    distance between the modes of each side: trials landing in one mode on one side and in
    another on the other cannot move the sides that far apart, so the change does not rest
    on the modes."""
    low, high = ci_pct
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0 <= high or min(low, high) <= -100:
        return False
    nearest = min(abs(math.log1p(low / 100)), abs(math.log1p(high / 100)))
    return all(nearest > mode_distance(modes) for modes in found.values())


def guard_trials(verdict: Verdict, base: ArrayLike, new: ArrayLike) -> Verdict:
    """A trial-level verdict made safe from a machine that switches speed.

    When either side's trial statistics fall into two or more modes, a Mann-Whitney
    verdict could rest on which mode each side's few trials happened to meet (block
    medians carry the mode of their time), so a "no change", and a regression or
    improvement whose interval reaches within the distance between the modes, becomes
    "inconclusive" with reason ``multimodal`` naming the modes. A regression or
    improvement larger than that distance over its whole interval (``beyond_modes``:
    ``sleep 0.01`` against ``sleep 0.02``, whose runs each flip by a few %) keeps its
    verdict with the modes as a warning, as do verdicts already inconclusive.
    """
    found = side_modes(base, new)
    if not found:
        return verdict
    described = "; ".join(f"{name}: {modes.describe(verdict.unit)}" for name, modes in found.items())
    if verdict.verdict == INCONCLUSIVE:
        return dataclasses.replace(verdict, warnings=(*verdict.warnings, f"{WARNING_MODES}: {described}"))
    if verdict.significant and beyond_modes(verdict.ci_pct, found):
        return dataclasses.replace(verdict, warnings=(
            *verdict.warnings,
            f"{WARNING_MODES}: {described}; the change is larger than the distance between the modes over its "
            "whole interval, so it does not rest on which mode the trials met",
        ))
    return dataclasses.replace(
        verdict,
        verdict=INCONCLUSIVE,
        tested=False,
        reason=(f"{REASON_MULTIMODAL}: the machine switches between speeds and the trials fall into separate "
                f"modes ({described}); a verdict could rest on which mode each side's trials met. Interleave "
                "finer (the interleaved design) or measure more trials"),
    )
