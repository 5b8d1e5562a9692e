"""Every constant and threshold used by kbench.compare, defined once with its reason.

Change a number here and every function, docstring reference and warning that
depends on it follows. Nothing else in the package hard-codes these values.
"""

from __future__ import annotations

from typing import Final

# --- Error rates --------------------------------------------------------------

#: Default significance level of one comparison (two-sided): the probability of
#: calling a regression or an improvement when nothing changed.
DEFAULT_ALPHA: Final[float] = 0.05

# --- Trials -------------------------------------------------------------------

#: Fewer trials than this on either side and no verdict is attempted. With 3 per
#: side the exact two-sided Mann-Whitney test cannot go below p = 2/20 = 0.1, so
#: at alpha = 0.05 the attainable-p check rejects n = 3 anyway; 3 is the floor
#: under which even the interval is meaningless.
DEFAULT_MIN_TRIALS: Final[int] = 3

#: Below this many trials per side a verdict carries a "few-trials" warning: the
#: interval is then built from very few pairwise differences and a single odd
#: trial moves it a lot.
RECOMMENDED_MIN_TRIALS: Final[int] = 5

# --- Mann-Whitney U -----------------------------------------------------------

#: The exact null distribution of U is used (no ties) while both sides have at
#: most this many trials; above, the normal approximation with continuity and
#: tie correction. At 50 x 50 the exact table has 2501 entries and takes well
#: under a millisecond; the normal approximation is then excellent.
MWU_EXACT_MAX_TRIALS: Final[int] = 50

# --- Kolmogorov-Smirnov -------------------------------------------------------

#: A "shape" warning is added when KS rejects at this level while the
#: Mann-Whitney test does not: the two sides differ in spread or shape
#: (bimodality, a slow tail) rather than in location.
KS_SHAPE_WARNING_ALPHA: Final[float] = 0.01

# --- Adaptive stopping --------------------------------------------------------

#: Default budget of the adaptive design: trials per side at which it stops.
DEFAULT_MAX_TRIALS: Final[int] = 20

#: Number of simulated null experiments used to calibrate the sequential
#: boundary (seeded, so the boundary is a deterministic function of the plan).
#: The Monte-Carlo error of the calibrated error rate is about
#: sqrt(alpha (1 - alpha) / N) = 0.0005 at alpha = 0.05 (the plan aims two of them
#: below alpha); the calibration takes about 0.5 s per plan for 20 looks.
SEQUENTIAL_CALIBRATION_EXPERIMENTS: Final[int] = 200_000

#: Seed of that calibration.
SEQUENTIAL_CALIBRATION_SEED: Final[int] = 20_240_611

# --- Minimum detectable effect ------------------------------------------------

#: Simulated experiments per candidate shift in the resampling estimate.
MDE_SIMULATIONS: Final[int] = 4_000

#: Seed of the resampling estimate.
MDE_SEED: Final[int] = 20_240_612

#: Asymptotic relative efficiency of the Mann-Whitney test against the t-test
#: for normal data (3 / pi); the normal-approximation MDE divides by its root.
MWU_NORMAL_EFFICIENCY: Final[float] = 3.0 / 3.141592653589793
