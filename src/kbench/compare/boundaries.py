"""Stopping boundaries for looking at a comparison after every pair of trials.

Problem: testing after each new pair at level alpha and stopping at the first
p <= alpha raises the false-positive rate far above alpha (about 0.2 for 20
looks at 0.05). The plan below lowers the level of each look so that the
probability of *any* false rejection over all looks stays <= alpha.

Plan. Looks happen at n = min_trials, ..., max_trials trials per side. Look k
rejects when the two-sided Mann-Whitney p-value p_k satisfies

    z_k = Phi^-1(1 - p_k / 2) > c * w_k,   i.e.   p_k <= nominal_k = 2 (1 - Phi(c w_k))

with the boundary shape w_k = 1 ("pocock": the same nominal level at every look,
stops early for clear differences) or w_k = sqrt(max_trials / n_k)
("obrien-fleming": very strict early, close to alpha at the last look).

Calibration of c. Under H0 with continuous data the sequence of ranks of
trials arriving in pairs is distribution-free (every ordering is equally
likely), so the joint null distribution of (p_1, ..., p_K) - with the exact
small-sample p-values the procedure really uses, discreteness included - can be
simulated once from uniform numbers. ``SEQUENTIAL_CALIBRATION_EXPERIMENTS``
seeded experiments give M = max_k z_k / w_k per experiment; c is set so that at
most floor(alpha E - 2 sqrt(alpha (1 - alpha) E)) experiments exceed it (alpha
minus two Monte-Carlo standard errors, so the true rate is below alpha with
~98% confidence despite the simulation), halfway between two attainable values
so that rounding cannot flip a decision. The plan is a deterministic function
of its arguments (cached).

Why it also covers intervals and "same" decisions: the interval at look k is
the Mann-Whitney inversion at level 1 - nominal_k ("repeated confidence
intervals", Jennison & Turnbull). Under the shift model, the interval misses
the true shift delta at some look exactly when the test of delta (a null
experiment after shifting) rejects at some look, so all intervals cover delta
simultaneously with probability >= 1 - alpha. Hence stopping with "different"
when delta = 0, or with "same within M" when |delta| >= M, each happens with
probability <= alpha, whatever the stopping rule reads from those intervals.

Ties (discrete trial statistics) make the test use its normal approximation
and the calibration approximate; drifts shared by both sides and randomised
A/B order within each pair keep the rate at or below alpha (tested).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Final, Literal

import numpy as np
from numpy.typing import NDArray

from kbench.compare.ranks import min_attainable_p, p_values, uses_exact
from kbench.compare.thresholds import (
    DEFAULT_ALPHA,
    DEFAULT_MAX_TRIALS,
    DEFAULT_MIN_TRIALS,
    SEQUENTIAL_CALIBRATION_EXPERIMENTS,
    SEQUENTIAL_CALIBRATION_SEED,
)
from kbench.compare.verdict import check_alpha

POCOCK: Final = "pocock"
OBRIEN_FLEMING: Final = "obrien-fleming"
Boundary = Literal["pocock", "obrien-fleming"]

_CHUNK = 10_000  # experiments simulated at once (bounds memory for large budgets)


@dataclass(frozen=True)
class SequentialPlan:
    """Looks and their nominal levels (module docstring).

    looks: trials per side at each look. nominal_alpha: the level p is compared
    with at each look (the interval there is at 1 - nominal). constant: c.
    calibrated_error_rate: fraction of the simulated null experiments that
    rejected at some look (the plan's simulated family-wise error rate).
    """

    alpha: float
    min_trials: int
    max_trials: int
    boundary: str
    looks: tuple[int, ...]
    nominal_alpha: tuple[float, ...]
    constant: float
    calibrated_error_rate: float
    experiments: int

    def nominal_at(self, trials: int) -> float:
        """Nominal level of the look at ``trials`` per side."""
        if not self.min_trials <= trials <= self.max_trials:
            raise ValueError(f"no look at {trials} trials: looks are at {self.min_trials}..{self.max_trials}")
        return self.nominal_alpha[trials - self.min_trials]

    def first_possible_stop(self) -> int:
        """Fewest trials per side at which a look can reject (the exact test's minimum p)."""
        for n, nominal in zip(self.looks, self.nominal_alpha, strict=True):
            if min_attainable_p(n, n, exact=uses_exact(n, n, ties=False)) <= nominal:
                return n
        return self.max_trials + 1

    def describe(self) -> str:
        return (
            f"sequential {self.boundary}, looks at {self.min_trials}..{self.max_trials} trials per side, "
            f"overall alpha {self.alpha:g} (simulated {self.calibrated_error_rate:.4f})"
        )


def _weights(looks: NDArray[np.int64], max_trials: int, boundary: str) -> NDArray[np.float64]:
    if boundary == POCOCK:
        return np.ones(looks.size)
    return np.sqrt(max_trials / looks.astype(np.float64))


def _null_maxima(looks: NDArray[np.int64], weights: NDArray[np.float64], experiments: int) -> NDArray[np.float64]:
    """max over looks of z_k / w_k for ``experiments`` simulated null experiments."""
    from scipy import special  # whole arrays at once; imported by the planning only (not by reading runs)

    rng = np.random.default_rng(SEQUENTIAL_CALIBRATION_SEED)
    n_max = int(looks[-1])
    first = int(looks[0])
    maxima = np.empty(experiments)
    for start in range(0, experiments, _CHUNK):
        size = min(_CHUNK, experiments - start)
        base = rng.random((size, n_max))
        new = rng.random((size, n_max))
        u = np.zeros(size)
        best = np.full(size, -np.inf)
        for n in range(1, n_max + 1):
            # pairs that involve trial n: new_n against base_1..n-1, new_1..n against base_n
            u += (new[:, n - 1 : n] > base[:, : n - 1]).sum(axis=1)
            u += (new[:, :n] > base[:, n - 1 : n]).sum(axis=1)
            if n < first:
                continue
            z = -special.ndtri(p_values(u, n, n) / 2.0)
            best = np.maximum(best, z / weights[n - first])
        maxima[start : start + size] = best
    return maxima


@lru_cache(maxsize=64)
def sequential_plan(
    *,
    alpha: float = DEFAULT_ALPHA,
    min_trials: int = DEFAULT_MIN_TRIALS,
    max_trials: int = DEFAULT_MAX_TRIALS,
    boundary: Boundary = POCOCK,
    experiments: int = SEQUENTIAL_CALIBRATION_EXPERIMENTS,
) -> SequentialPlan:
    """The calibrated plan of the module docstring (deterministic, cached).

    Costs about 0.1-0.5 s the first time for budgets up to ~50 trials per side.
    """
    check_alpha(alpha)
    if boundary not in (POCOCK, OBRIEN_FLEMING):
        raise ValueError(f"boundary must be {POCOCK!r} or {OBRIEN_FLEMING!r}, got {boundary!r}")
    if min_trials < 1 or max_trials < min_trials:
        raise ValueError(f"need 1 <= min_trials <= max_trials, got {min_trials} and {max_trials}")
    if experiments < 100:
        raise ValueError(f"experiments must be at least 100, got {experiments}")
    looks = np.arange(min_trials, max_trials + 1, dtype=np.int64)
    weights = _weights(looks, max_trials, boundary)
    maxima = np.sort(_null_maxima(looks, weights, experiments))[::-1]
    allowed = max(0, math.floor(alpha * experiments - 2.0 * math.sqrt(alpha * (1.0 - alpha) * experiments)))
    value = maxima[allowed]
    larger = maxima[:allowed][maxima[:allowed] > value]
    constant = float((value + larger[-1]) / 2.0) if larger.size else float(value) + 1e-6
    from scipy import special

    nominal = 2.0 * special.ndtr(-constant * weights)
    return SequentialPlan(
        alpha=alpha,
        min_trials=min_trials,
        max_trials=max_trials,
        boundary=boundary,
        looks=tuple(int(n) for n in looks),
        nominal_alpha=tuple(float(a) for a in nominal),
        constant=constant,
        calibrated_error_rate=float(np.mean(maxima > constant)),
        experiments=experiments,
    )
