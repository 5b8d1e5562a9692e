"""The statistical oracle: is a commit's performance that of the good or of the bad commit?

Evidence, on the log scale (a multiplicative change is a shift there): the commit's trial
statistics X and the reference trials G (good commit) and B (bad commit) measured in the
same interleaved rounds. Two hypotheses: X has G's mean (``good``) or B's (``bad``), with
one within-group spread sigma for all three. With flat priors on the two means the log
likelihood ratio (evidence for ``bad``) has a closed form (see ``log_likelihood_ratio``):

    LLR = [k_g (x - g)^2 - k_b (x - b)^2] / (2 sigma^2) + 1/2 log(((n_x + n_g) n_b) / ((n_x + n_b) n_g)),
    k_g = n_x n_g / (n_x + n_g),  k_b = n_x n_b / (n_x + n_b)

where x, g, b are group means. sigma is the pooled within-group standard deviation of all
groups given (this step's and the check's), inflated by df / (df - 2) for its own
uncertainty. Measuring goes on while |LLR| < log(1 / error) (Wald's sequential test:
each decision is wrong with probability about ``error``); then ``bad`` if LLR > 0, else
``good``. When the budget is spent first (``final``), the sign of the LLR decides and the
decision is marked ``weak`` (the driver re-checks weak decisions at the boundary).

Direction does not matter: a bisection looks for *the* change between G and B, whichever
way it goes. Mann-Whitney verdicts of X against G and against B (``compare_trials``)
are reported next to the decision; when X differs significantly from both, the
decision says which end it is closer to and is flagged ``between``: the change may be
spread over several commits, and the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kbench.bisect.search import BAD, GOOD
from kbench.compare.judge import compare_trials
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.compare.verdict import LOWER_IS_BETTER, Verdict

UNDECIDED = "undecided"
SIGMA_FLOOR = 1e-4
"""Smallest spread assumed (0.01 %): identical trial statistics do not make the LLR infinite."""


@dataclass(frozen=True)
class Classification:
    verdict: str  # GOOD, BAD or UNDECIDED
    weak: bool
    position: float  # 0 at G's median, 1 at B's (log scale); NaN if undefined
    llr: float  # log likelihood ratio, bad over good
    between: bool  # differs significantly from both references
    vs_good: Verdict
    vs_bad: Verdict
    reason: str


def position(good: Sequence[float], bad: Sequence[float], trials: Sequence[float]) -> float:
    """Where the median of ``trials`` lies between G's (0) and B's (1), on a log scale."""
    g, b, x = (float(np.median(np.asarray(v, dtype=float))) for v in (good, bad, trials))
    if min(g, b, x) <= 0 or g == b:
        return math.nan
    return math.log(x / g) / math.log(b / g)


def _logs(values: Sequence[float]) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.size == 0 or not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError("trial statistics must be positive finite numbers, and at least one per group")
    return np.asarray(np.log(array), dtype=float)


def pooled_sigma(groups: Sequence[Sequence[float]]) -> float:
    """Pooled within-group standard deviation of the log trial statistics, inflated by
    sqrt(df / (df - 2)) (the spread of a t variable) for the uncertainty of the estimate."""
    squares, df = 0.0, 0
    for group in groups:
        if len(group) < 2:
            continue
        logs = _logs(group)
        squares += float(np.sum((logs - logs.mean()) ** 2))
        df += logs.size - 1
    if df == 0:
        return math.inf
    sigma = math.sqrt(squares / df)
    inflation = math.sqrt(df / (df - 2)) if df > 2 else 3.0
    return max(sigma, SIGMA_FLOOR) * inflation


def log_likelihood_ratio(
    good: Sequence[float], bad: Sequence[float], trials: Sequence[float], sigma: float,
) -> float:
    """Evidence that ``trials`` share B's mean rather than G's (module docstring)."""
    x, g, b = _logs(trials), _logs(good), _logs(bad)
    nx, ng, nb = x.size, g.size, b.size
    if not math.isfinite(sigma):
        return 0.0
    k_g, k_b = nx * ng / (nx + ng), nx * nb / (nx + nb)
    distance = k_g * (x.mean() - g.mean()) ** 2 - k_b * (x.mean() - b.mean()) ** 2
    return float(distance / (2 * sigma**2) + 0.5 * math.log((nx + ng) * nb / ((nx + nb) * ng)))


def classify(
    good: Sequence[float], bad: Sequence[float], trials: Sequence[float], *, error: float = 1e-3,
    alpha: float = DEFAULT_ALPHA, spread_from: Sequence[Sequence[float]] = (), final: bool = False,
) -> Classification:
    """Decide when |LLR| >= log(1 / error); ``final``: decide weakly instead of UNDECIDED.

    ``spread_from``: more groups (e.g. the check's references) that only inform sigma.
    """
    if not 0 < error < 0.5:
        raise ValueError(f"error must be in (0, 0.5), got {error}")
    sigma = pooled_sigma([good, bad, trials, *spread_from])
    llr = log_likelihood_ratio(good, bad, trials, sigma)
    vs_good = compare_trials(good, trials, direction=LOWER_IS_BETTER, alpha=alpha)
    vs_bad = compare_trials(bad, trials, direction=LOWER_IS_BETTER, alpha=alpha)
    where = position(good, bad, trials)
    between = vs_good.significant and vs_bad.significant
    threshold = math.log(1 / error)
    odds = f"LLR {llr:+.1f}" + (f"; differs from both, {where:.2f} of the way from good to bad" if between else "")
    if llr >= threshold:
        return Classification(BAD, False, where, llr, between, vs_good, vs_bad, f"like bad ({odds})")
    if llr <= -threshold:
        return Classification(GOOD, False, where, llr, between, vs_good, vs_bad, f"like good ({odds})")
    if not final:
        return Classification(UNDECIDED, False, where, llr, between, vs_good, vs_bad, f"undecided ({odds})")
    verdict = BAD if llr > 0 else GOOD
    return Classification(
        verdict, True, where, llr, between, vs_good, vs_bad,
        f"weak: {odds}, short of ±{threshold:.1f}"
        + ("" if between else f"; median at {where:.2f} of the way from good to bad"),
    )
