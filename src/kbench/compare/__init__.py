"""kbench.compare: A/B verdicts over trial statistics that state their own error rates.

Trials, not samples, are the unit of evidence (samples inside one run are
correlated): each trial is reduced to ``trial_statistic`` and the sides are
compared with rank methods. Modules, one job each:

- thresholds   every constant (default alpha, trial counts, calibration sizes)
- trial        trial_statistic: median of the steady-state part of a trial
- ranks        two-sided Mann-Whitney U (exact / normal), null distribution
- interval     CI of the change by inverting the Mann-Whitney test (Hodges-Lehmann)
- verdict      Verdict and the decision table (regression / improvement /
               no change / inconclusive)
- judge        compare_trials: one metric, fixed number of trials
- multiple     adjust: Holm (family-wise) or Benjamini-Hochberg (FDR)
- boundaries   calibrated stopping boundaries for looking after every pair
- sequential   SequentialComparison: adaptive stopping with stated error rates
- detectable   minimum_detectable_effect from A/A calibration trials
- sensitivity  sensitivity_matrix: KS and MWU p for every pair of configurations
- simulate     seeded synthetic interleaved trial streams (drift, spikes)
"""

from kbench.compare.boundaries import OBRIEN_FLEMING, POCOCK, SequentialPlan, sequential_plan
from kbench.compare.detectable import DetectableEffect, minimum_detectable_effect
from kbench.compare.judge import compare_trials
from kbench.compare.multiple import BENJAMINI_HOCHBERG, HOLM, adjust, benjamini_hochberg, holm
from kbench.compare.sensitivity import SensitivityMatrix, sensitivity_matrix
from kbench.compare.sequential import CONTINUE, DIFFERENT, SAME, SequentialComparison, SequentialStep
from kbench.compare.trial import trial_statistic
from kbench.compare.verdict import (
    HIGHER_IS_BETTER,
    IMPROVEMENT,
    INCONCLUSIVE,
    LOWER_IS_BETTER,
    NO_CHANGE,
    REGRESSION,
    Verdict,
)

__all__ = [
    "BENJAMINI_HOCHBERG",
    "CONTINUE",
    "DIFFERENT",
    "HIGHER_IS_BETTER",
    "HOLM",
    "IMPROVEMENT",
    "INCONCLUSIVE",
    "LOWER_IS_BETTER",
    "NO_CHANGE",
    "OBRIEN_FLEMING",
    "POCOCK",
    "REGRESSION",
    "SAME",
    "DetectableEffect",
    "SensitivityMatrix",
    "SequentialComparison",
    "SequentialPlan",
    "SequentialStep",
    "Verdict",
    "adjust",
    "benjamini_hochberg",
    "compare_trials",
    "holm",
    "minimum_detectable_effect",
    "sensitivity_matrix",
    "sequential_plan",
    "trial_statistic",
]
