"""One-call description of a sample series: location, spread, tails, CI, outliers, warm-up.

A Summary describes exactly the values given, all of them, in the unit given
(the caller passes per-op nanoseconds, for instance). Warm-up is detected and
reported (``steady_state_index`` and a warning) but never removed: slice the
values and summarise again to drop it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from kbench.stats import warmup as _warmup
from kbench.stats.ci import (
    METHOD_MIN_MAX_FALLBACK,
    METHOD_ORDER_STATISTICS,
    ci_from_ranks_warning,
    quantile_ci_ranks,
)
from kbench.stats.outliers import deviation_limit, outlier_scale
from kbench.stats.percentiles import interpolate, order_statistics, type7_positions
from kbench.stats.thresholds import (
    DEFAULT_CONFIDENCE,
    MAD_TO_SIGMA,
    SUMMARY_PROBABILITIES,
)
from kbench.stats.validate import as_samples


@dataclass(frozen=True)
class Summary:
    """Statistics of n samples; every field is defined exactly here.

    n: number of samples.  min, max: extremes.  mean: arithmetic mean.
    stdev: sample standard deviation with ddof=1; 0.0 when n = 1 (not NaN).
    p50, p90, p95, p99, p999: Hyndman-Fan type-7 quantiles at 0.5, 0.9, 0.95,
      0.99, 0.999 (numpy "linear", R default); p50 is the median.
    mad: raw median absolute deviation median(|x - p50|).
    mad_scaled: 1.4826 * mad (estimates sigma for normal data).
    median_ci: (low, high), a distribution-free CI of the population median from
      binomial order statistics (``kbench.stats.ci``).
    median_ci_level: the requested confidence; median_ci_coverage: the exact
      coverage of the ranks used (>= level unless the fallback was needed);
      median_ci_method: which construction (``ci.METHOD_*``).
    outliers: count of values with |0.6745 * (x - p50) / mad| > 3.5 (modified
      z-score, Iglewicz-Hoaglin, evaluated as |x - p50| > 3.5 * mad / 0.6745;
      with mad = 0, the smallest non-zero |x - p50| stands for the mad: the
      data's resolution). See ``kbench.stats.outliers``.
    steady_state_index: first sample of the steady state by robust MSER-5
      (``kbench.stats.warmup``); 0 when no warm-up or detection was off.
    warnings: human-readable, each starting with a stable tag:
      "ci-level-unreachable" (too few samples for the level; CI is (min, max)),
      "warm-up" / "no-steady-state" (``warmup.detect_warmup``).
    """

    n: int
    min: float
    max: float
    mean: float
    stdev: float
    p50: float
    p90: float
    p95: float
    p99: float
    p999: float
    mad: float
    mad_scaled: float
    median_ci: tuple[float, float]
    median_ci_level: float
    median_ci_coverage: float
    median_ci_method: str
    outliers: int
    steady_state_index: int
    warnings: tuple[str, ...] = ()

    @property
    def median(self) -> float:
        """The median (same as p50)."""
        return self.p50

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict: tuples become lists, numbers are Python numbers."""
        data = asdict(self)
        data["median_ci"] = list(self.median_ci)
        data["warnings"] = list(self.warnings)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Summary:
        """The Summary ``to_dict`` described (as stored with a run); KeyError if a field is missing."""
        low, high = data["median_ci"]
        values = {name: data[name] for name in cls.__dataclass_fields__ if name not in ("median_ci", "warnings")}
        return cls(**values, median_ci=(float(low), float(high)), warnings=tuple(data.get("warnings", ())))


def summarize(values: ArrayLike, *, confidence: float = DEFAULT_CONFIDENCE, detect_warmup: bool = True) -> Summary:
    """Summarise ``values`` (validated by ``as_samples``; never modified).

    Cost: one selection pass (``np.partition``) for all percentiles and both CI
    ranks, one for the MAD, a few linear passes, plus robust MSER-5 when
    ``detect_warmup`` is true (two more selections if a warm-up is found).
    No full sort.
    """
    samples = as_samples(values)
    n = samples.size
    warnings: list[str] = []
    # One scratch copy serves every step below (selection, variance, MAD,
    # outliers, clipping for MSER): fewer 8n-byte buffers, fewer page faults.
    scratch = samples.copy()

    lower, upper, fraction = type7_positions(n, SUMMARY_PROBABILITIES)
    ranks = quantile_ci_ranks(n, 0.5, confidence=confidence)
    wanted = np.concatenate([lower, upper, [ranks.lower_rank - 1, ranks.upper_rank - 1]])
    selected = order_statistics(scratch, wanted, overwrite=True)
    k = lower.size
    p50, p90, p95, p99, p999 = (float(v) for v in interpolate(selected[:k], selected[k : 2 * k], fraction))
    ci_low, ci_high = float(selected[2 * k]), float(selected[2 * k + 1])
    if not ranks.reached:
        warnings.append(ci_from_ranks_warning(ranks, n, 0.5, confidence))

    mean = float(samples.mean())
    if n == 1:
        stdev = 0.0
    else:  # two-pass variance, as numpy's std(ddof=1), inside the scratch buffer
        np.subtract(samples, mean, out=scratch)
        np.multiply(scratch, scratch, out=scratch)
        stdev = float(np.sqrt(scratch.sum() / (n - 1)))

    # MAD: select in place inside |x - median|; a partition keeps the multiset,
    # so the same buffer then serves the outlier count.
    np.subtract(samples, p50, out=scratch)
    np.abs(scratch, out=scratch)
    d_lower, d_upper, d_fraction = type7_positions(n, [0.5])
    mad_pair = order_statistics(scratch, [d_lower[0], d_upper[0]], overwrite=True)
    mad = float(interpolate(mad_pair[:1], mad_pair[1:], d_fraction)[0])
    outliers = int(np.count_nonzero(scratch > deviation_limit(outlier_scale(mad, scratch))))

    steady_state_index = 0
    if detect_warmup:
        warmup = _warmup.detect_warmup(samples, center=p50, mad_scaled=MAD_TO_SIGMA * mad, _scratch=scratch)
        steady_state_index = warmup.steady_state_index
        warnings.extend(warmup.warnings)

    return Summary(
        n=n,
        min=float(samples.min()),
        max=float(samples.max()),
        mean=mean,
        stdev=stdev,
        p50=p50,
        p90=p90,
        p95=p95,
        p99=p99,
        p999=p999,
        mad=mad,
        mad_scaled=MAD_TO_SIGMA * mad,
        median_ci=(ci_low, ci_high),
        median_ci_level=confidence,
        median_ci_coverage=ranks.coverage,
        median_ci_method=METHOD_ORDER_STATISTICS if ranks.reached else METHOD_MIN_MAX_FALLBACK,
        outliers=outliers,
        steady_state_index=steady_state_index,
        warnings=tuple(warnings),
    )
