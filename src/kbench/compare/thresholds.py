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

#: Equivalence margin of ``kbench compare`` when neither ``--margin`` nor a stored
#: ``kbench calibrate`` gives one: changes within +/-0.5% count as "no change" once the
#: interval shows it. Small enough that a 1% change is reported as a change, wide enough
#: that the interleaved design shows two identical programs equal within seconds.
DEFAULT_MARGIN: Final[float] = 0.005

#: An interleaved comparison given no margin (neither ``--margin`` nor a stored calibration)
#: measures its own (``kbench.compare.noise_margin``) once this many blocks are in: twice the
#: interval's half-width expected at the end of the budget, at least ``DEFAULT_MARGIN``. 16
#: blocks put the interval's width within about +/-25% (one look in; equivalence spends almost
#: nothing at the first looks, so waiting costs no decision).
NOISE_MARGIN_MIN_BLOCKS: Final[int] = 16

#: ... and at most this (1%): a wider margin could call a 1% change "no change". A machine
#: whose noise needs more ends "inconclusive" with the budget that would do.
MAX_NOISE_MARGIN: Final[float] = 0.01

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

# --- Wilcoxon signed-rank (paired blocks) -------------------------------------

#: The exact null distribution of the signed-rank statistic is used (no ties, no
#: zeros) up to this many blocks, as scipy's ``wilcoxon(method="auto")`` does; above,
#: the normal approximation with tie and continuity correction.
SIGNED_RANK_EXACT_MAX: Final[int] = 50

#: Fewer blocks than this and no paired verdict is attempted: with 6 blocks the exact
#: test's smallest p is 2/2^6 = 0.031, the first count that can reach alpha = 0.05.
PAIRED_MIN_BLOCKS: Final[int] = 6

#: A look before the last one spends alpha only from this many blocks on: an early look
#: tests at about alpha/3, which the exact test reaches from 8 blocks (p >= 0.0078).
PAIRED_LOOK_MIN_BLOCKS: Final[int] = 8

# --- Kolmogorov-Smirnov -------------------------------------------------------

#: A "shape" warning is added when KS rejects at this level while the
#: Mann-Whitney test does not: the two sides differ in spread or shape
#: (bimodality, a slow tail) rather than in location.
KS_SHAPE_WARNING_ALPHA: Final[float] = 0.01

# --- Modes (a machine that switches between speeds) ------------------------------

#: A cluster needs at least this many values, and this fraction of the side's values:
#: fewer are stray slow measurements (outliers), not a mode. At 10% a run of 50 with 5%
#: spikes of random size was called bimodal one time in ten; at 15% one in a thousand.
MODE_MIN_COUNT: Final[int] = 3
MODE_MIN_FRACTION: Final[float] = 0.15

#: Two clusters are separate modes when the empty gap between them is at least this
#: many pooled within-cluster sigmas...
MODE_MIN_GAP_SIGMAS: Final[float] = 3.0

#: ... their medians are at least this many pooled sigmas apart (about Ashman's D; 2 is
#: the usual "clearly bimodal" for normal mixtures, a unimodal normal sample's best
#: split gives about 2.7; with 5 (and a gap of 3) fewer than 2% of unimodal samples of
#: 10 - normal, t3, Cauchy-like, 5% spikes - are called multimodal, none from 50 on) ...
MODE_SEPARATION: Final[float] = 5.0

#: ... and at least this far apart relatively (2%: closer clusters are too close to
#: the changes being measured to be told from them).
MODE_MIN_RELATIVE_GAP: Final[float] = 0.02

#: Floor of a cluster's robust sigma on the log scale (0.25%): identical or quantized
#: values have no spread but are not infinitely far from their neighbours.
MODE_SIGMA_FLOOR: Final[float] = 0.0025

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

#: Simulated Brownian paths behind the alpha-spending boundaries of the interleaved
#: design (``kbench.compare.spending``): the Monte-Carlo error of the spent alpha is
#: about sqrt(alpha (1 - alpha) / N) = 0.0005 at alpha = 0.05, and the plan aims two of
#: them below alpha. A look costs a few milliseconds.
SPENDING_PATHS: Final[int] = 200_000

#: Seed of those paths (the boundaries are a deterministic function of the looks).
SPENDING_SEED: Final[int] = 20_261_123

# --- Minimum detectable effect ------------------------------------------------

#: Simulated experiments per candidate shift in the resampling estimate.
MDE_SIMULATIONS: Final[int] = 4_000

#: Seed of the resampling estimate.
MDE_SEED: Final[int] = 20_240_612

#: Asymptotic relative efficiency of the Mann-Whitney test against the t-test
#: for normal data (3 / pi); the normal-approximation MDE divides by its root.
MWU_NORMAL_EFFICIENCY: Final[float] = 3.0 / 3.141592653589793
