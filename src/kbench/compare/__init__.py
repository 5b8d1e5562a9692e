"""kbench.compare: A/B verdicts over trial statistics that state their own error rates.

Import the module you need: the package re-exports nothing, so that reading a constant
(``thresholds``) or a verdict word does not import scipy (about 1 s) into a command's start.

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
