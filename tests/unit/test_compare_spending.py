"""Alpha spending: the levels of looks at any block counts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from kbench.compare.spending import SpendingBoundary, pocock_spending, spendable_alpha


def test_one_final_look_tests_at_all_of_alpha() -> None:
    look = SpendingBoundary(0.05).look(40, 1.0)
    # the only look spends alpha less the Monte-Carlo allowance: |Z| >= c with P = that level
    assert look.nominal_alpha == pytest.approx(spendable_alpha(0.05), abs=0.001)
    assert look.boundary == pytest.approx(-special.ndtri(spendable_alpha(0.05) / 2), abs=0.01)


def test_spending_follows_the_pocock_type_function() -> None:
    assert pocock_spending(0.0, 0.05) == 0.0 and pocock_spending(1.0, 0.05) == pytest.approx(0.05)
    boundary = SpendingBoundary(0.05)
    for n, f in ((10, 0.25), (20, 0.5), (30, 0.75)):
        boundary.look(n, f)
        assert boundary.spent == pytest.approx(pocock_spending(f, boundary.total), abs=2e-5)
    boundary.look(40, 1.0)
    assert boundary.spent == pytest.approx(boundary.total, abs=2e-5)


def test_looks_below_the_minimum_spend_nothing_and_counts_must_grow() -> None:
    boundary = SpendingBoundary(0.05, min_blocks=8)
    assert boundary.look(4, 0.2).nominal_alpha == 0.0
    with pytest.raises(ValueError, match="growing"):
        boundary.look(4, 0.4)
    assert boundary.look(8, 0.4).nominal_alpha > 0
    assert boundary.look(8, 1.0).nominal_alpha > 0  # the last look may repeat a count
    with pytest.raises(ValueError, match="already"):
        boundary.look(9, 1.0)


def test_the_boundaries_keep_the_error_of_a_random_walk_at_alpha() -> None:
    # An independent check: a fresh Gaussian random walk looked at with the boundaries crosses
    # with probability alpha (the test's own simulation uses other paths).
    boundary = SpendingBoundary(0.05)
    counts = (9, 17, 26, 33, 40)
    looks = [boundary.look(n, n / 40) for n in counts]
    rng = np.random.default_rng(99)
    walks = np.cumsum(rng.standard_normal((100_000, 40)), axis=1)
    crossed = np.zeros(walks.shape[0], dtype=bool)
    for n, look in zip(counts, looks, strict=True):
        crossed |= np.abs(walks[:, n - 1]) / math.sqrt(n) >= look.boundary
    rate = crossed.mean()
    assert rate == pytest.approx(0.05, abs=3 * math.sqrt(0.05 * 0.95 / 100_000) + 0.001)
    assert stats.binomtest(int(crossed.sum()), crossed.size, 0.05).pvalue > 0.001
