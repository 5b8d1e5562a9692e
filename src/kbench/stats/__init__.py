"""kbench.stats: pure statistics over sample arrays (no I/O).

Every function validates its input with ``as_samples`` (1-D, non-empty, finite,
non-negative) and documents exactly what it computes; constants live in
``kbench.stats.thresholds``. Modules:

- validate     as_samples
- percentiles  Hyndman-Fan type-7 quantiles (numpy "linear", R default)
- dispersion   sample stdev (ddof=1), MAD raw and scaled
- ci           distribution-free quantile/median CIs from binomial order statistics
- outliers     modified z-score (Iglewicz-Hoaglin)
- warmup       robust MSER-5 steady-state detection, chunk medians
- histogram    linear and log2 histograms, ECDF, compact CDF
- summary      Summary and summarize()
"""

from kbench.stats.ci import QuantileCI, median_ci, quantile_ci, quantile_ci_ranks
from kbench.stats.dispersion import mad, mad_scaled, sample_stdev
from kbench.stats.histogram import (
    CompactCdf,
    Ecdf,
    Histogram,
    Log2Histogram,
    cdf_at,
    compact_cdf,
    ecdf,
    linear_histogram,
    log2_histogram,
)
from kbench.stats.outliers import modified_z_scores, outlier_count, outlier_mask
from kbench.stats.percentiles import median, percentiles, quantiles
from kbench.stats.summary import Summary, summarize
from kbench.stats.validate import as_samples
from kbench.stats.warmup import Warmup, chunk_medians, detect_warmup, steady_state_index

__all__ = [
    "CompactCdf",
    "Ecdf",
    "Histogram",
    "Log2Histogram",
    "QuantileCI",
    "Summary",
    "Warmup",
    "as_samples",
    "cdf_at",
    "chunk_medians",
    "compact_cdf",
    "detect_warmup",
    "ecdf",
    "linear_histogram",
    "log2_histogram",
    "mad",
    "mad_scaled",
    "median",
    "median_ci",
    "modified_z_scores",
    "outlier_count",
    "outlier_mask",
    "percentiles",
    "quantile_ci",
    "quantile_ci_ranks",
    "quantiles",
    "sample_stdev",
    "steady_state_index",
    "summarize",
]
