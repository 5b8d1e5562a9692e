"""Alpha spending: the levels of looks at any block counts."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from kbench.compare.spending import SpendingBoundary, obrien_fleming_spending, pocock_spending, spendable_alpha


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


def test_obrien_fleming_spending_matches_its_closed_form() -> None:
    # alpha(f) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(f)): at f = 1 all of alpha, at f = 1/4 the
    # two-sided level of |Z| >= 2 z_{0.975} = 3.92 (scipy's normal sf as the reference).
    assert obrien_fleming_spending(1.0, 0.05) == pytest.approx(0.05)
    assert obrien_fleming_spending(0.25, 0.05) == pytest.approx(2 * stats.norm.sf(2 * stats.norm.isf(0.025)))
    assert obrien_fleming_spending(0.0, 0.05) == 0.0


def test_a_single_one_sided_look_is_the_one_sided_normal_quantile() -> None:
    look = SpendingBoundary(0.05, sided=1, spending="obrien-fleming").look(40, 1.0)
    # one tail of 200,000 seeded paths: the level's Monte-Carlo standard error is 0.0005,
    # the quantile's about 0.005 (these paths land 2.3 of them below)
    assert look.boundary == pytest.approx(stats.norm.isf(spendable_alpha(0.05)), abs=0.02)
    assert look.nominal_alpha == pytest.approx(spendable_alpha(0.05), abs=0.0025)


def test_one_sided_boundaries_keep_a_random_walks_one_sided_crossings_at_alpha() -> None:
    boundary = SpendingBoundary(0.05, sided=1, spending="obrien-fleming")
    counts = (8, 16, 24, 32, 40)
    looks = [boundary.look(n, n / 40) for n in counts]
    # most of alpha is kept for the end: the last boundary is near z_{0.95}, the first far above it
    assert looks[0].boundary > 3.5 and looks[-1].boundary < 1.8
    rng = np.random.default_rng(7)
    walks = np.cumsum(rng.standard_normal((100_000, 40)), axis=1)
    crossed = np.zeros(walks.shape[0], dtype=bool)
    for n, look in zip(counts, looks, strict=True):
        crossed |= walks[:, n - 1] / math.sqrt(n) >= look.boundary
    assert crossed.mean() == pytest.approx(0.05, abs=3 * math.sqrt(0.05 * 0.95 / 100_000) + 0.001)


def test_bad_sides_and_spending_functions_are_refused() -> None:
    with pytest.raises(ValueError, match="sided"):
        SpendingBoundary(0.05, sided=3)
    with pytest.raises(ValueError, match="spending"):
        SpendingBoundary(0.05, spending="haybittle")
