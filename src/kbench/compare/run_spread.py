"""Do the runs of the module agree? A check beside the verdict of a comparison inside kbench.ko.

The blocks of such a comparison come in runs of the module, each setting its sides up afresh,
and a run can carry a state of its own: comparing 98 against 100 steps, one run in 10 to 20
measured the pair 1-3 % further apart than the others (docs/PERFORMANCE.md, "Runs of the
module"). The signed-rank interval treats blocks as independent, so it does not contain such
a run's offset. The Kruskal-Wallis test of the block log-ratios grouped by run
(``scipy.stats.kruskal``) says whether the runs differ; where they do (p below
``RUNS_DISAGREE_P``), the verdict carries a warning with the runs' medians, so that a size
read off a narrow interval is not taken for settled. Equal sides never showed it, and the
warning does not change the verdict: the randomized order still bounds false verdicts.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

WARNING_RUNS_DISAGREE = "runs-disagree"
RUNS_DISAGREE_P = 0.001
MIN_RUN_BLOCKS = 5
"""Blocks a run needs to count in the check (the incomplete last run of a budget is often tiny)."""
MIN_RUNS = 3


def runs_disagree(log_ratios: Sequence[float] | np.ndarray, run_blocks: Sequence[int]) -> str | None:
    """The warning where the runs' block log-ratios differ (Kruskal-Wallis p < RUNS_DISAGREE_P), else None.

    ``run_blocks``: how many of ``log_ratios``, in order, each run gave."""
    from scipy import stats

    values = np.asarray(log_ratios, dtype=np.float64)
    if not run_blocks or sum(run_blocks) != values.size:
        return None
    edges = np.cumsum([0, *run_blocks])
    groups = [values[start:end] for start, end in itertools.pairwise(edges)]
    groups = [g[np.isfinite(g)] for g in groups]
    groups = [g for g in groups if g.size >= MIN_RUN_BLOCKS]
    if len(groups) < MIN_RUNS:
        return None
    pooled = np.concatenate(groups)
    if np.ptp(pooled) == 0.0:
        return None
    p = float(stats.kruskal(*groups).pvalue)
    if not p < RUNS_DISAGREE_P:
        return None
    medians = [100.0 * math.expm1(float(np.median(g))) for g in groups]
    return (f"{WARNING_RUNS_DISAGREE}: the {len(groups)} runs of the module measured the change between "
            f"{min(medians):+.2f}% and {max(medians):+.2f}% (median of each run's blocks; Kruskal-Wallis "
            f"p={p:.2g}); the interval is over blocks and does not contain a run's own offset: measure "
            "again before relying on the size")
