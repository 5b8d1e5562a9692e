"""Every constant and threshold used by kbench.stats, defined once with its source.

Change a number here and every function, docstring reference and warning that
depends on it follows. Nothing else in the package hard-codes these values.
"""

from __future__ import annotations

from typing import Final

# --- Robust scale -------------------------------------------------------------

#: Factor that turns the raw median absolute deviation into a consistent estimator
#: of the standard deviation for normally distributed data: 1 / Phi^-1(3/4).
MAD_TO_SIGMA: Final[float] = 1.4826

#: Factor that turns the mean absolute deviation around the median into a
#: consistent estimator of sigma for normal data: sqrt(pi / 2). Used only as the
#: fall-back scale when the MAD is 0 (see ``warmup.detect_warmup``).
MEAN_ABS_DEV_TO_SIGMA: Final[float] = 1.2533

# --- Outliers (Iglewicz & Hoaglin 1993, "How to Detect and Handle Outliers") ---

#: The constant in the modified z-score M_i = 0.6745 * (x_i - median) / MAD.
#: (0.6745 = Phi^-1(3/4) rounded as in the original text.)
MODIFIED_Z_FACTOR: Final[float] = 0.6745

#: A value is an outlier when |M_i| > 3.5.
MODIFIED_Z_OUTLIER: Final[float] = 3.5

# --- Confidence intervals -----------------------------------------------------

#: Default confidence level for intervals reported in summaries.
DEFAULT_CONFIDENCE: Final[float] = 0.95

# --- Summary percentiles ------------------------------------------------------

#: Probabilities reported by ``summarize``: p50, p90, p95, p99, p99.9.
SUMMARY_PROBABILITIES: Final[tuple[float, ...]] = (0.5, 0.9, 0.95, 0.99, 0.999)

# --- Warm-up / steady state (MSER-5, White 1997) -----------------------------

#: Batch size of the batch means MSER works on (the "5" in MSER-5).
MSER_BATCH_SIZE: Final[int] = 5

#: Fewer batches than this and warm-up detection is not attempted
#: (steady_state_index is 0): with so few batches MSER's minimum is noise.
MSER_MIN_BATCHES: Final[int] = 10

#: MSER searches truncation points in the first this-fraction of the batches.
MSER_SEARCH_FRACTION: Final[float] = 0.5

#: Before MSER, values are clipped to median +/- this many robust standard
#: deviations (MAD * MAD_TO_SIGMA), so that a few huge spikes (interrupts) cannot
#: dominate the variance and drag the truncation point onto themselves.
WARMUP_CLIP_SIGMAS: Final[float] = 5.0

#: A detected warm-up is reported as a warning only when the median of the
#: warm-up part differs from the median of the steady part by more than this
#: fraction of the steady median (|warm - steady| / steady > 0.05, i.e. 5 %).
WARMUP_MATERIAL_RELATIVE_DIFFERENCE: Final[float] = 0.05

#: ... and only when the steady median lies outside the distribution-free
#: confidence interval, at this level, of the warm-up part's median. MSER picks
#: the segment that looks most different, so on stationary data a short "warm-up"
#: often differs by > 5 % by chance; this guard keeps such false alarms rare
#: (about 0.3 % of stationary lognormal series in simulation, vs 2-9 % without).
WARMUP_CONFIDENCE: Final[float] = 0.99

#: ... and only when the warm-up part holds at least this many samples: the
#: median of a handful of samples is too noisy to call anything material.
WARMUP_MIN_SAMPLES: Final[int] = 20

# --- Histograms and CDFs ------------------------------------------------------

#: Upper bound on the number of bins chosen automatically (Freedman-Diaconis on
#: heavy-tailed data can ask for millions).
HISTOGRAM_MAX_AUTO_BINS: Final[int] = 200

#: Default number of points of a compact CDF (probabilities 0, 0.01, ..., 1).
COMPACT_CDF_POINTS: Final[int] = 101
