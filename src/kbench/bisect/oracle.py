"""The statistical oracle: is a commit's performance that of the good or of the bad commit?

Evidence: the commit's trial statistics X and the two reference distributions from the
initial check, G (good commit) and B (bad commit). Two A/B verdicts are drawn with
``compare_trials`` (two-sided Mann-Whitney at ``alpha`` with its CI, no margin):
``vs_good`` = G vs X and ``vs_bad`` = B vs X. Direction does not matter: a bisection
looks for *the* change between G and B, whichever way it goes.

Decision rules, the first that applies wins:
  1. X differs from B and not from G         -> good (strong)
  2. X differs from G and not from B         -> bad (strong)
  3. otherwise                               -> undecided (both or neither differ);
     the caller adds trials; once the budget is spent it decides ``weakly``
     by position: p = log(med X / med G) / log(med B / med G), good if p < 0.5,
     else bad, and marks the step weak (it is re-checked at the end).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kbench.bisect.search import BAD, GOOD
from kbench.compare.judge import compare_trials
from kbench.compare.verdict import LOWER_IS_BETTER, Verdict

UNDECIDED = "undecided"


@dataclass(frozen=True)
class Classification:
    verdict: str  # GOOD, BAD or UNDECIDED
    weak: bool
    position: float  # 0 at G's median, 1 at B's (log scale); NaN if undefined
    vs_good: Verdict
    vs_bad: Verdict
    reason: str


def position(good: Sequence[float], bad: Sequence[float], trials: Sequence[float]) -> float:
    """Where the median of ``trials`` lies between G's (0) and B's (1), on a log scale."""
    g, b, x = (float(np.median(np.asarray(v, dtype=float))) for v in (good, bad, trials))
    if min(g, b, x) <= 0 or g == b:
        return math.nan
    return math.log(x / g) / math.log(b / g)


def classify(
    good: Sequence[float], bad: Sequence[float], trials: Sequence[float], *, alpha: float = 0.05,
    final: bool = False,
) -> Classification:
    """Rules 1-3 of the module docstring; ``final``: decide weakly instead of UNDECIDED."""
    vs_good = compare_trials(good, trials, direction=LOWER_IS_BETTER, alpha=alpha)
    vs_bad = compare_trials(bad, trials, direction=LOWER_IS_BETTER, alpha=alpha)
    where = position(good, bad, trials)
    if vs_bad.significant and not vs_good.significant:
        return Classification(GOOD, False, where, vs_good, vs_bad, "differs from bad, not from good")
    if vs_good.significant and not vs_bad.significant:
        return Classification(BAD, False, where, vs_good, vs_bad, "differs from good, not from bad")
    both = "differs from both" if vs_good.significant else "differs from neither"
    if not final:
        return Classification(UNDECIDED, False, where, vs_good, vs_bad, both)
    verdict = GOOD if not where >= 0.5 else BAD  # NaN (degenerate) counts as good
    return Classification(
        verdict, True, where, vs_good, vs_bad, f"{both}; weak: median at {where:.2f} of the way from good to bad",
    )
