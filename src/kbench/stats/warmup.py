"""Warm-up detection: where does the steady state of a sample series begin?

Rule: robust MSER-5 (Marginal Standard Error Rule, White 1997; MSER-5 as in
White, Cobb & Spratt 2000), in four steps on the series x_1..x_n in order:

1. Clip (winsorise) a copy of the values to [m - c*s, m + c*s], with m the
   median, s = 1.4826 * MAD the robust sigma and c = ``WARMUP_CLIP_SIGMAS`` (5).
   If the MAD is 0, s = 1.2533 * mean(|x - m|) instead; if that is 0 too the
   series is constant and the answer is 0. Why: per-op latency is heavy-tailed
   with rare huge spikes (interrupts). Plain MSER minimises a variance, and one
   spike of 1000x the median anywhere in the first half makes "truncate just
   after the spike" the winner. Clipped, a spike weighs like an ordinary slow
   sample, while a genuine warm-up (many slow samples) still stands out.
2. Batch means Y_1..Y_k of consecutive, non-overlapping batches of
   b = ``MSER_BATCH_SIZE`` (5) samples; the last n mod b samples are not used.
3. For each truncation d = 0 .. floor(k * ``MSER_SEARCH_FRACTION``) (the first
   half only) compute
       z(d) = sum_{j>d} (Y_j - mean(Y_{d+1..k}))**2 / (k - d)**2
   i.e. the variance of the remaining batch means divided by their number.
4. d* = the smallest d whose z(d) is within 1e-9 * z(0) of the minimum (so
   rounding noise on flat data never truncates). The steady state starts at
   sample index b * d* (0-based; 0 means no warm-up).

With fewer than ``MSER_MIN_BATCHES`` batches the rule is not applied (index 0).
When d* is the last point searched, the series may not have reached a steady
state at all (a trend, or a warm-up longer than half the run): ``detect_warmup``
says so with a warning instead of pretending.

MSER on stationary data usually returns 0 or a small index (a few per cent of
the series), because the sample variance of the tail fluctuates; that is why a
warm-up is *reported* only when it also matters (``detect_warmup``: the medians
differ by more than 5 % and by more than chance).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from kbench.stats.ci import quantile_ci_ranks
from kbench.stats.percentiles import median_of_valid, order_statistics
from kbench.stats.thresholds import (
    MAD_TO_SIGMA,
    MEAN_ABS_DEV_TO_SIGMA,
    MSER_BATCH_SIZE,
    MSER_MIN_BATCHES,
    MSER_SEARCH_FRACTION,
    WARMUP_CLIP_SIGMAS,
    WARMUP_CONFIDENCE,
    WARMUP_MATERIAL_RELATIVE_DIFFERENCE,
    WARMUP_MIN_SAMPLES,
)
from kbench.stats.validate import as_samples

WARNING_WARMUP = "warm-up"
WARNING_NO_STEADY_STATE = "no-steady-state"

# A truncation must lower z by more than this fraction of z(0) to count.
_TIE_TOLERANCE = 1e-9


def mser_statistic(batch_means: ArrayLike, *, search_fraction: float = MSER_SEARCH_FRACTION) -> NDArray[np.float64]:
    """z(d) of step 3 for d = 0 .. floor(k * search_fraction), k = len(batch_means).

    No clipping or batching here: this is the plain MSER criterion on the
    sequence given (exposed for testing and for callers with their own batches).
    """
    y = np.asarray(batch_means, dtype=np.float64)
    k = y.size
    if k == 0:
        raise ValueError("MSER needs at least one batch mean")
    last = int(np.floor(k * search_fraction))
    centred = y - y.mean()  # centring keeps the suffix sums below well-conditioned
    # Suffix sums over j >= d (0-based), for d = 0 .. last.
    suffix_sum = np.cumsum(centred[::-1])[::-1][: last + 1]
    suffix_squares = np.cumsum((centred * centred)[::-1])[::-1][: last + 1]
    remaining = (k - np.arange(last + 1)).astype(np.float64)
    sum_of_squares = np.maximum(suffix_squares - suffix_sum * suffix_sum / remaining, 0.0)
    z: NDArray[np.float64] = sum_of_squares / (remaining * remaining)
    return z


def _robust_scale(samples: NDArray[np.float64], center: float, mad_scaled: float | None) -> float:
    if mad_scaled is None:
        mad_scaled = MAD_TO_SIGMA * median_of_valid(np.abs(samples - center), overwrite=True)
    if mad_scaled > 0:
        return float(mad_scaled)
    return MEAN_ABS_DEV_TO_SIGMA * float(np.mean(np.abs(samples - center)))


def _mser_batches(
    samples: NDArray[np.float64],
    center: float | None,
    mad_scaled: float | None,
    scratch: NDArray[np.float64] | None = None,
) -> tuple[int, int]:
    """(d*, last searched d) in batches; (0, 0) when the rule does not apply.

    ``scratch``: optional float64 buffer of at least samples.size values that may
    be overwritten (saves allocating the clipped copy).
    """
    batches = samples.size // MSER_BATCH_SIZE
    if batches < MSER_MIN_BATCHES:
        return 0, 0
    m = median_of_valid(samples) if center is None else float(center)
    scale = _robust_scale(samples, m, mad_scaled)
    if scale == 0:
        return 0, 0
    used = samples[: batches * MSER_BATCH_SIZE]
    out = None if scratch is None else scratch[: used.size]
    clipped = np.clip(used, m - WARMUP_CLIP_SIGMAS * scale, m + WARMUP_CLIP_SIGMAS * scale, out=out)
    batch_means = clipped.reshape(batches, MSER_BATCH_SIZE).mean(axis=1)
    z = mser_statistic(batch_means)
    best = float(z.min())
    d = int(np.flatnonzero(z <= best + _TIE_TOLERANCE * float(z[0]))[0])
    return d, z.size - 1


def steady_state_index(values: ArrayLike, *, center: float | None = None, mad_scaled: float | None = None) -> int:
    """0-based index of the first steady-state sample by robust MSER-5 (module docstring).

    ``center`` (median) and ``mad_scaled`` may be passed when already known.
    """
    d, _ = _mser_batches(as_samples(values), center, mad_scaled)
    return d * MSER_BATCH_SIZE


@dataclass(frozen=True)
class Warmup:
    """Outcome of ``detect_warmup``.

    steady_state_index: first steady sample (0-based), from ``steady_state_index``.
    warmup_median / steady_median: type-7 medians of values[:index] / values[index:]
    (warmup_median is NaN when index is 0).
    relative_difference: (warmup_median - steady_median) / steady_median; NaN when
    index is 0; +/-inf when the steady median is 0 and the warm-up median is not.
    warmup_median_ci: distribution-free CI (``kbench.stats.ci``) at level
    WARMUP_CONFIDENCE of the warm-up part's median; (NaN, NaN) when index is 0.
    material: all of index >= WARMUP_MIN_SAMPLES, |relative_difference| >
    WARMUP_MATERIAL_RELATIVE_DIFFERENCE, and steady_median outside
    warmup_median_ci (the difference is both large and not chance).
    at_search_limit: MSER's minimum sits at the end of its search range.
    warnings: human-readable, each starting with a stable tag (WARNING_*).
    """

    steady_state_index: int
    warmup_median: float
    steady_median: float
    relative_difference: float
    warmup_median_ci: tuple[float, float]
    material: bool
    at_search_limit: bool
    warnings: tuple[str, ...] = ()


def detect_warmup(
    values: ArrayLike,
    *,
    center: float | None = None,
    mad_scaled: float | None = None,
    _scratch: NDArray[np.float64] | None = None,
) -> Warmup:
    """Find the warm-up by robust MSER-5 and judge whether it matters.

    Warnings produced:
    - "warm-up: ..." when the warm-up is material (see ``Warmup.material``);
    - "no-steady-state: ..." when MSER's minimum is at the end of the searched
      first half (index > 0), whatever the medians say.

    ``center`` (median) and ``mad_scaled`` may be passed when already known.
    """
    samples = as_samples(values)
    n = samples.size
    d, last = _mser_batches(samples, center, mad_scaled, _scratch)
    index = d * MSER_BATCH_SIZE
    if index == 0:
        steady = median_of_valid(samples) if center is None else float(center)
        nan = float("nan")
        return Warmup(0, nan, steady, nan, (nan, nan), False, False)

    warm = median_of_valid(samples[:index])
    ranks = quantile_ci_ranks(index, 0.5, confidence=WARMUP_CONFIDENCE)
    low, high = order_statistics(samples[:index], [ranks.lower_rank - 1, ranks.upper_rank - 1])
    steady = median_of_valid(samples[index:])
    if steady > 0:
        relative = (warm - steady) / steady
    else:
        relative = 0.0 if warm == steady else float(np.copysign(np.inf, warm - steady))
    material = (
        index >= WARMUP_MIN_SAMPLES
        and abs(relative) > WARMUP_MATERIAL_RELATIVE_DIFFERENCE
        and not low <= steady <= high
    )
    at_limit = d == last
    warnings: list[str] = []
    if material:
        warnings.append(
            f"{WARNING_WARMUP}: the first {index} of {n} samples ({index / n:.1%}) look like "
            f"warm-up: their median {warm:.6g} is {relative:+.1%} from the steady-state "
            f"median {steady:.6g} (threshold {WARMUP_MATERIAL_RELATIVE_DIFFERENCE:.0%}, outside "
            f"the {WARMUP_CONFIDENCE:.0%} interval of the warm-up median); "
            f"consider discarding values[:{index}]"
        )
    if at_limit:
        warnings.append(
            f"{WARNING_NO_STEADY_STATE}: the steady-state search (MSER-5) ended at its limit, "
            f"sample {index} of {n}; the series may drift or still be warming up - measure longer"
        )
    return Warmup(index, warm, steady, relative, (float(low), float(high)), material, at_limit, tuple(warnings))


def chunk_medians(values: ArrayLike, chunks: int = 4) -> NDArray[np.float64]:
    """Medians of ``chunks`` consecutive parts of the series, in order.

    The parts are as equal as possible (``np.array_split``: the first n mod chunks
    parts hold one extra value). With chunks=4 this is the quarter-by-quarter
    table that shows a warm-up at a glance. Raises ``ValueError`` when chunks < 1
    or there are fewer values than chunks.
    """
    samples = as_samples(values)
    if chunks < 1:
        raise ValueError(f"chunks must be at least 1, got {chunks}")
    if samples.size < chunks:
        raise ValueError(f"cannot split {samples.size} samples into {chunks} chunks")
    return np.array([median_of_valid(part) for part in np.array_split(samples, chunks)])
