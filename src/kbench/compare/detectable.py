"""The noise floor: the smallest change a trial budget can detect, from A/A calibration data.

Input: two sets of trial statistics of the same thing (A/A), each set in its
own runs. Their log values, each centred on its own median, are the residuals
r; sigma_log = 1.4826 * median(|r|) is their robust standard deviation.

Two estimates of the minimum detectable effect (MDE): the smallest shift
delta = log(new/base) that the fixed-design two-sided Mann-Whitney test at
level alpha with n trials per side detects (p <= alpha, right direction) with
probability ``power``. Reported as an increase, 100 * (exp(delta) - 1) %
(a decrease of 100 * (1 - exp(-delta)) % is equally detectable).

- "normal": the closed form for a shift of normal data, with the rank test's
  asymptotic efficiency 3/pi against the t-test:
      delta = (z_{1-alpha/2} + z_{power}) * sigma_log * sqrt(2 / n) / sqrt(3/pi)
  (the opposite tail is ignored; accurate from ~10 trials, optimistic below).
- "resample" (default): ``MDE_SIMULATIONS`` seeded experiments draw n base and
  n new residuals with replacement from r. With c the test's critical count
  (``ranks.critical_count``), an experiment detects a shift delta exactly when
  delta > its (mn - c)-th smallest difference base_i - new_j (then at least
  mn - c of the mn pairs have new_j + delta > base_i). So the detection
  threshold of each experiment is one order statistic, and the MDE is the
  ``power``-quantile of those thresholds - no search over delta. This keeps
  the data's real shape (skew, rare slow trials) and the exact small-n test.
  Resampling creates ties that real data would not have; their effect is small.

The A/A sets are also compared with each other (``compare_trials``): when they
differ significantly, runs of one thing do not agree, and a change below that
offset cannot be told from it whatever the trial count; a warning says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.compare.judge import compare_trials
from kbench.compare.ranks import critical_count, min_attainable_p, uses_exact
from kbench.compare.thresholds import (
    DEFAULT_ALPHA,
    DEFAULT_MARGIN,
    MDE_SEED,
    MDE_SIMULATIONS,
    MWU_NORMAL_EFFICIENCY,
)
from kbench.compare.verdict import LOWER_IS_BETTER, check_alpha
from kbench.stats.distributions import normal_quantile
from kbench.stats.thresholds import MAD_TO_SIGMA

NORMAL: Final = "normal"
RESAMPLE: Final = "resample"
Method = Literal["normal", "resample"]

WARNING_ALPHA_UNREACHABLE = "alpha-unreachable"
WARNING_AA_DIFFERS = "aa-differs"
WARNING_FEW_AA_TRIALS = "few-aa-trials"

_CHUNK = 500  # simulated experiments per block (bounds memory at n**2 differences each)
_FEW_AA_TRIALS = 10


@dataclass(frozen=True)
class DetectableEffect:
    """Outcome of ``minimum_detectable_effect`` (module docstring).

    effect_pct: the MDE as an increase in %, inf when alpha is unreachable at n.
    sigma_log: robust sigma of the log trial statistics (about the relative noise).
    aa_change_pct / aa_p_value: the A/A sets compared with each other.
    """

    effect_pct: float
    n_trials: int
    power: float
    alpha: float
    method: str
    sigma_log: float
    aa_change_pct: float
    aa_p_value: float
    warnings: tuple[str, ...] = ()


def _log_set(values: ArrayLike, name: str) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size < 3:
        raise ValueError(f"A/A set {name} needs a 1-D sequence of at least 3 trial statistics")
    if not np.all(np.isfinite(array) & (array > 0)):
        raise ValueError(f"A/A set {name} holds values that are not finite and positive")
    return np.log(array)


def normal_mde_log(sigma_log: float, n_trials: int, *, power: float, alpha: float) -> float:
    """delta of the "normal" closed form (module docstring), on the log scale."""
    z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power)
    return z * sigma_log * math.sqrt(2.0 / n_trials / MWU_NORMAL_EFFICIENCY)


def resampled_mde_log(residuals: NDArray[np.float64], n_trials: int, *, power: float, alpha: float) -> float:
    """delta of the "resample" method (module docstring); inf when alpha is unreachable."""
    n = n_trials
    c = critical_count(n, n, alpha, exact=uses_exact(n, n, ties=False))
    if c < 0:
        return math.inf
    rng = np.random.default_rng(MDE_SEED)
    rank = n * n - c - 1  # 0-based index of the (mn - c)-th smallest difference
    thresholds = np.empty(MDE_SIMULATIONS)
    for start in range(0, MDE_SIMULATIONS, _CHUNK):
        size = min(_CHUNK, MDE_SIMULATIONS - start)
        base = rng.choice(residuals, size=(size, n))
        new = rng.choice(residuals, size=(size, n))
        differences = (base[:, :, None] - new[:, None, :]).reshape(size, n * n)
        thresholds[start : start + size] = np.partition(differences, rank, axis=1)[:, rank]
    thresholds.sort()
    return float(thresholds[math.ceil(power * MDE_SIMULATIONS) - 1])


def minimum_detectable_effect(
    aa_trials: tuple[ArrayLike, ArrayLike],
    n_trials: int,
    *,
    power: float = 0.8,
    alpha: float = DEFAULT_ALPHA,
    method: Method = RESAMPLE,
) -> DetectableEffect:
    """Smallest relative change detectable with ``n_trials`` per side (module docstring).

    aa_trials: two sets of trial statistics of the same thing (at least 3 each,
    finite and positive). Raises ``ValueError`` for bad input or parameters.
    """
    check_alpha(alpha)
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie strictly between 0 and 1, got {power!r}")
    if n_trials < 1:
        raise ValueError(f"n_trials must be at least 1, got {n_trials}")
    if method not in (NORMAL, RESAMPLE):
        raise ValueError(f"method must be {NORMAL!r} or {RESAMPLE!r}, got {method!r}")
    first, second = _log_set(aa_trials[0], "0"), _log_set(aa_trials[1], "1")
    residuals = np.concatenate([first - np.median(first), second - np.median(second)])
    sigma_log = MAD_TO_SIGMA * float(np.median(np.abs(residuals)))
    aa = compare_trials(np.exp(first), np.exp(second), direction=LOWER_IS_BETTER, alpha=alpha)

    warnings: list[str] = []
    best_p = min_attainable_p(n_trials, n_trials, exact=uses_exact(n_trials, n_trials, ties=False))
    if best_p > alpha:
        delta = math.inf
        warnings.append(
            f"{WARNING_ALPHA_UNREACHABLE}: with {n_trials} trials per side the smallest attainable p is "
            f"{best_p:.3g} > alpha {alpha:g}; no change is detectable"
        )
    elif method == NORMAL:
        delta = normal_mde_log(sigma_log, n_trials, power=power, alpha=alpha)
    else:
        delta = resampled_mde_log(residuals, n_trials, power=power, alpha=alpha)
    if aa.significant:
        warnings.append(
            f"{WARNING_AA_DIFFERS}: the two A/A sets differ by {aa.change_pct:+.2f}% (p={aa.p_value:.3g}); runs "
            "of the same thing disagree, so changes of that size cannot be told from run-to-run offsets"
        )
    if min(first.size, second.size) < _FEW_AA_TRIALS:
        warnings.append(
            f"{WARNING_FEW_AA_TRIALS}: fewer than {_FEW_AA_TRIALS} trials in an A/A set; the noise estimate "
            "is itself noisy"
        )
    return DetectableEffect(
        effect_pct=float(100.0 * math.expm1(delta)) if math.isfinite(delta) else math.inf,
        n_trials=n_trials,
        power=power,
        alpha=alpha,
        method=method,
        sigma_log=sigma_log,
        aa_change_pct=aa.change_pct,
        aa_p_value=aa.p_value,
        warnings=tuple(warnings),
    )


def expected_half_width_log(sigma_log: float, n: int, *, alpha: float, paired: bool) -> float:
    """Expected half-width (log scale) of the rank interval with n blocks (paired) or n trials per side.

    Normal approximation with the rank tests' efficiency 3/pi: z_{1-alpha/2} sigma / sqrt(n)
    for the signed-rank interval of n block log-ratios of sd sigma, and z sigma sqrt(2/n)
    for the Mann-Whitney interval of two sets of n trials of sd sigma.
    """
    if n < 1:
        return math.inf
    z = normal_quantile(1.0 - alpha / 2.0)
    spread = sigma_log / math.sqrt(n) if paired else sigma_log * math.sqrt(2.0 / n)
    return z * spread / math.sqrt(MWU_NORMAL_EFFICIENCY)


def suggested_margin(sigma_log: float, n: int, *, alpha: float, paired: bool) -> float:
    """The equivalence margin (a fraction) ``kbench calibrate`` stores: twice the expected half-width
    at the budget, so that identical sides end "no change" in most comparisons, never below
    ``DEFAULT_MARGIN``, rounded up to 0.1%."""
    return floored_margin(math.expm1(2.0 * expected_half_width_log(sigma_log, n, alpha=alpha, paired=paired)))


def floored_margin(width: float) -> float:
    """A margin (a fraction) of ``width`` rounded up to 0.1%, never below ``DEFAULT_MARGIN``."""
    return max(DEFAULT_MARGIN, math.ceil(width * 1000.0 - 1e-9) / 1000.0)


def paired_mde_pct(sigma_log: float, n: int, *, power: float, alpha: float) -> float:
    """Smallest change (%) the signed-rank test of n blocks detects with ``power`` (normal approximation)."""
    z = normal_quantile(1.0 - alpha / 2.0) + normal_quantile(power)
    return float(100.0 * math.expm1(z * sigma_log / math.sqrt(n) / math.sqrt(MWU_NORMAL_EFFICIENCY)))
