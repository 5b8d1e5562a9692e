"""An interleaved comparison's default equivalence margin, measured from its own blocks.

"No change" needs the interval of the change to lie within +/-margin. Whether identical
sides get there depends on the noise: with block log-ratios of sd sigma and n blocks, the
interval's half-width is about z sigma / sqrt(n). A fixed margin is either too wide for a
quiet machine (changes that matter are called "no change") or too narrow for a noisy one
(identical programs run out of budget, "inconclusive"). On this kind of VM a 100 ms program
spreads 1.0-1.4% from one execution to the next: at a 20 s budget the 95% interval is about
+/-0.3-0.4% wide, and the fixed +/-0.5% let only 7 comparisons of two identical programs in 10
end "no change".

So, when neither ``--margin`` nor a stored ``kbench calibrate`` gives one, the comparison
sets its margin once ``NOISE_MARGIN_MIN_BLOCKS`` blocks are in, as ``kbench calibrate``
does (``kbench.compare.detectable.suggested_margin``) but from the test itself:

    h_now  = half of the width of the 95% signed-rank interval of the blocks so far (log)
    h_end  = h_now * sqrt(blocks so far / blocks expected at the end of the budget)
    margin = exp(2 h_end) - 1, rounded up to 0.1%, within [DEFAULT_MARGIN, MAX_NOISE_MARGIN]

and keeps it for the rest of the comparison; the last look judges against it, the looks before
hold the floor (``PairedSequential.margin_at``). Identical sides then end "no change" unless
their estimate strays more than about 2.2 standard errors from 0 (rarely), and the two
one-sided tests still bound P("no change" | |change| >= margin) by alpha: the interval's
width (the margin) and its centre (the decision) are nearly independent. The cap keeps a 1%
change from ever fitting the margin; a machine whose noise needs more states by how much
the budget should grow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from kbench.compare.detectable import floored_margin
from kbench.compare.signed_ranks import EXACT, signed_rank_test, walsh_interval
from kbench.compare.thresholds import DEFAULT_ALPHA, DEFAULT_MARGIN, MAX_NOISE_MARGIN, NOISE_MARGIN_MIN_BLOCKS

MARGIN_FROM_NOISE = "from this comparison's noise"


@dataclass(frozen=True)
class NoiseMargin:
    """The margin (a fraction) and what it was measured from."""

    margin: float
    wanted: float  # twice the expected half-width, before the floor and the cap (a fraction)
    blocks: int
    expected_blocks: int

    @property
    def capped(self) -> bool:
        return self.wanted > MAX_NOISE_MARGIN

    def budget_factor(self) -> float:
        """How many times the budget it would take for the wanted margin to fit under the cap."""
        return (math.log1p(self.wanted) / math.log1p(MAX_NOISE_MARGIN)) ** 2

    def describe(self) -> str:
        text = (f"±{100 * self.margin:.1f}% {MARGIN_FROM_NOISE}: twice the 95% interval's half-width expected "
                f"at {self.expected_blocks} blocks (measured on {self.blocks}), within ±{100 * DEFAULT_MARGIN:g}% to "
                f"±{100 * MAX_NOISE_MARGIN:g}%")
        if self.capped:
            text += f"; {self.capped_note()}"
        return text

    def capped_note(self) -> str:
        """What the cap cost, and the budget that would do."""
        return (f"the noise wanted ±{100 * self.wanted:.1f}%, capped at ±{100 * MAX_NOISE_MARGIN:g}%: about "
                f"{self.budget_factor():.1f}x the budget would let identical sides end 'no change'")


def noise_margin(
    d: ArrayLike, expected_blocks: int, *, alpha: float = DEFAULT_ALPHA, min_blocks: int = NOISE_MARGIN_MIN_BLOCKS,
) -> NoiseMargin | None:
    """The margin of the module docstring from block log-ratios ``d``; None with fewer than
    ``min_blocks`` values, a value that is not finite, or an interval the test cannot give
    at ``alpha`` (a comparison's last look passes its own count: a margin from few blocks is
    wide, but it is the only measure there is)."""
    ratios = np.asarray(d, dtype=np.float64)
    if ratios.ndim != 1:
        raise ValueError(f"block log-ratios must be one-dimensional, got shape {ratios.shape}")
    if ratios.size < min_blocks or not np.all(np.isfinite(ratios)):
        return None
    test = signed_rank_test(ratios)
    whole = test.n_used == ratios.size
    interval = walsh_interval(ratios, alpha, exact=test.method == EXACT and whole,
                              sigma=test.sigma if whole else None)
    if not interval.reached:
        return None
    expected = max(int(expected_blocks), ratios.size)
    half_width = (interval.high - interval.low) / 2.0 * math.sqrt(ratios.size / expected)
    wanted = math.expm1(2.0 * half_width)
    return NoiseMargin(min(MAX_NOISE_MARGIN, floored_margin(wanted)), wanted, int(ratios.size), expected)
