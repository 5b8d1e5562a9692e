"""The margin an interleaved comparison measures from its own blocks: against an interval found
with scipy, its floor, cap and rounding, and its error rates in simulated comparisons."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from kbench.compare.noise_margin import noise_margin
from kbench.compare.paired import PairedSequential
from kbench.compare.sequential import DIFFERENT, SAME
from kbench.compare.simulate import interleaved_blocks, look_until_done
from kbench.compare.thresholds import DEFAULT_MARGIN, MAX_NOISE_MARGIN, NOISE_MARGIN_MIN_BLOCKS
from kbench.compare.verdict import INCONCLUSIVE


def _scipy_interval(d: np.ndarray, alpha: float) -> tuple[float, float]:
    """The shifts the exact signed-rank test (scipy) does not reject, found by bisection on each side."""
    def rejects(shift: float) -> bool:
        return bool(stats.wilcoxon(d - shift, method="exact").pvalue <= alpha)

    def edge(inside: float, outside: float) -> float:
        for _ in range(100):
            middle = (inside + outside) / 2.0
            inside, outside = (inside, middle) if rejects(middle) else (middle, outside)
        return inside

    centre = float(np.median(d))
    return edge(centre, centre - 1.0), edge(centre, centre + 1.0)


def test_the_margin_is_twice_the_expected_half_width_of_the_scipy_interval() -> None:
    rng = np.random.default_rng(5)
    d = rng.normal(0.0, 0.03, 20)  # wide enough that neither the floor nor the cap applies
    low, high = _scipy_interval(d, 0.05)
    expected_blocks = 300
    wanted = math.expm1(2.0 * (high - low) / 2.0 * math.sqrt(20 / expected_blocks))
    found = noise_margin(d, expected_blocks)
    assert found is not None
    assert found.wanted == pytest.approx(wanted, rel=1e-6)
    assert DEFAULT_MARGIN < found.margin < MAX_NOISE_MARGIN
    assert found.margin == pytest.approx(math.ceil(wanted * 1000) / 1000)  # rounded up to 0.1%
    assert (found.blocks, found.expected_blocks) == (20, 300)
    assert "twice the 95% interval's half-width expected at 300 blocks (measured on 20)" in found.describe()


def test_the_margin_keeps_its_floor_and_cap_and_says_what_budget_would_do() -> None:
    rng = np.random.default_rng(6)
    quiet = noise_margin(rng.normal(0.0, 0.001, 40), 40)
    assert quiet is not None and quiet.margin == DEFAULT_MARGIN and not quiet.capped
    noisy = noise_margin(rng.normal(0.0, 0.05, 40), 40)
    assert noisy is not None and noisy.margin == MAX_NOISE_MARGIN and noisy.capped
    # the half-width shrinks as 1/sqrt(blocks): this many times the blocks bring the wanted margin to the cap
    factor = noisy.budget_factor()
    assert factor == pytest.approx((math.log1p(noisy.wanted) / math.log1p(MAX_NOISE_MARGIN)) ** 2)
    assert f"{factor:.1f}x the budget" in noisy.describe()


def test_too_few_or_bad_blocks_give_no_margin() -> None:
    assert noise_margin(np.full(NOISE_MARGIN_MIN_BLOCKS - 1, 0.01), 100) is None
    assert noise_margin(np.r_[np.zeros(20), np.nan], 100) is None
    assert noise_margin(np.linspace(-0.01, 0.01, 7), 7, min_blocks=1) is not None
    with pytest.raises(ValueError, match="one-dimensional"):
        noise_margin(np.zeros((4, 4)), 16)


def _sequential(rng: np.random.Generator, blocks: int, **stream: float) -> tuple[str, PairedSequential]:
    d, base, new = interleaved_blocks(rng, blocks, **stream)  # type: ignore[arg-type]
    comparison = PairedSequential(direction="lower", margin_from_noise=True)
    step = look_until_done(comparison, d, base, new)
    assert step.done
    return step.decision, comparison


def test_the_margin_is_set_once_at_the_first_look_with_enough_blocks_and_kept() -> None:
    rng = np.random.default_rng(9)
    d, base, new = interleaved_blocks(rng, 50, noise=0.012)
    comparison = PairedSequential(direction="lower", margin_from_noise=True)
    comparison.look(d[:10], base[:20], new[:20], 0.2)
    assert comparison.margin is None and comparison.noise is None
    comparison.look(d[:20], base[:40], new[:40], 0.4)
    assert comparison.noise is not None and comparison.noise.expected_blocks == 50
    first = comparison.margin
    assert first is not None and DEFAULT_MARGIN <= first <= MAX_NOISE_MARGIN
    comparison.look(d[:30], base[:60], new[:60], 0.6)
    assert comparison.margin == first and comparison.noise.blocks == 20
    # a given margin is never replaced
    fixed = PairedSequential(direction="lower", margin=0.02, margin_from_noise=True)
    fixed.look(d[:20], base[:40], new[:40], 0.4)
    assert fixed.margin == 0.02 and fixed.noise is None


def test_a_last_look_measures_the_margin_from_the_blocks_it_has() -> None:
    rng = np.random.default_rng(10)
    d, base, new = interleaved_blocks(rng, 10, noise=0.003)
    comparison = PairedSequential(direction="lower", margin_from_noise=True)
    step = comparison.look(d, base, new, 1.0)
    assert comparison.noise is not None and comparison.noise.blocks == 10
    assert step.verdict is not None and step.verdict.margin_pct == pytest.approx(100 * comparison.margin)


@pytest.mark.parametrize("stream", [{"noise": 0.012}, {"noise": 0.008, "tails": 3}, {"noise": 0.01, "walk": 0.002}])
def test_identical_sides_end_no_change_in_nearly_every_comparison(stream: dict[str, float]) -> None:
    # 47 blocks: a 20 s budget of 100 ms programs; block log-ratios spread about 1% (this VM)
    rng = np.random.default_rng(21)
    decisions = [_sequential(rng, 47, **stream)[0] for _ in range(300)]
    same, different = decisions.count(SAME) / 300, decisions.count(DIFFERENT) / 300
    # alpha 0.05 plus three binomial standard errors (0.013 at 300 runs); the rest is "no change"
    assert different <= 0.05 + 3 * 0.013, decisions
    assert same >= 0.90, decisions


def test_a_one_percent_change_is_found_and_never_fits_the_margin() -> None:
    rng = np.random.default_rng(22)
    outcomes = [_sequential(rng, 47, noise=0.012, shift=0.01) for _ in range(200)]
    decisions = [decision for decision, _ in outcomes]
    assert decisions.count(DIFFERENT) >= 190, decisions
    assert all(c.margin is None or c.margin <= MAX_NOISE_MARGIN for _, c in outcomes)


def test_a_change_at_the_capped_margin_is_called_no_change_at_most_alpha_of_the_time() -> None:
    # noise so high that the margin is capped at 1%, and a true change of exactly 1%
    rng = np.random.default_rng(23)
    outcomes = [_sequential(rng, 47, noise=0.03, shift=MAX_NOISE_MARGIN) for _ in range(300)]
    assert sum(c.margin == MAX_NOISE_MARGIN for _, c in outcomes) >= 270
    # the two one-sided tests bound "no change" for a change at least as large as the margin
    same = sum(decision == SAME for decision, _ in outcomes) / 300
    assert same <= 0.05 + 3 * 0.013
    # a comparison that ran out of budget with a capped margin says what budget would do
    stopped = [c for decision, c in outcomes if decision == INCONCLUSIVE and c.noise is not None and c.noise.capped]
    assert stopped
    for comparison in stopped:
        assert comparison.last is not None and comparison.last.verdict is not None
        assert "capped at ±1%: about" in comparison.last.verdict.reason
        assert "x the budget would let identical sides end 'no change'" in comparison.last.verdict.reason


def test_a_look_before_the_last_holds_the_floor_and_the_last_the_measured_margin() -> None:
    """A margin measured from the noise is what the end of the budget resolves: an early look
    that fits it would call a real +0.5 % "no change within ±0.8 %" before the budget could
    show it, so looks before the last judge against the floor."""
    rng = np.random.default_rng(9)
    d, base, new = interleaved_blocks(rng, 50, noise=0.012, shift=0.002)
    comparison = PairedSequential(direction="lower", margin_from_noise=True)
    comparison.look(d[:20], base[:40], new[:40], 0.4)
    measured = comparison.margin
    assert measured is not None and measured > DEFAULT_MARGIN
    early = comparison.look(d[:30], base[:60], new[:60], 0.6)
    assert early.verdict is not None and early.verdict.margin_pct == pytest.approx(100 * DEFAULT_MARGIN)
    assert comparison.margin == measured  # kept for the last look
    assert comparison.judged_margin == DEFAULT_MARGIN
    last = comparison.look(d, base, new, 1.0)
    assert last.verdict is not None and last.verdict.margin_pct == pytest.approx(100 * measured)
    assert comparison.judged_margin == measured
    described = comparison.describe_margin()
    assert described is not None and "before the last" not in described


@pytest.mark.parametrize("seed", [31, 32])
def test_no_early_look_says_no_change_within_more_than_the_floor(seed: int) -> None:
    # a real +0.5 % at a noise whose margins exceed the floor (block log-ratios spread ~1.5 %)
    rng = np.random.default_rng(seed)
    outcomes = [_sequential(rng, 47, noise=0.015, shift=0.005) for _ in range(200)]
    assert sum(c.noise is not None and c.noise.margin > DEFAULT_MARGIN for _, c in outcomes) >= 150
    for decision, comparison in outcomes:
        step = comparison.last
        assert step is not None and step.verdict is not None
        if decision == SAME and step.trials < 47:
            assert step.verdict.margin_pct == pytest.approx(100 * DEFAULT_MARGIN)
            if comparison.margin is not None and comparison.margin > DEFAULT_MARGIN:
                described = comparison.describe_margin()
                assert described is not None and f"held ±{100 * DEFAULT_MARGIN:g}%" in described
