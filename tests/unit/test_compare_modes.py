"""Modes: a machine that switches speed is noticed; ordinary noise is not taken for modes."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.compare.judge import compare_trials
from kbench.compare.modes import find_modes, guard_trials
from kbench.compare.verdict import INCONCLUSIVE, REGRESSION

UNIMODAL = {
    "normal 2%": lambda rng, n: 1000 * np.exp(0.02 * rng.standard_normal(n)),
    "t3 2%": lambda rng, n: 1000 * np.exp(0.02 * rng.standard_t(3, n)),
    "5% spikes of +20..100%": lambda rng, n: 1000 * np.exp(0.02 * rng.standard_normal(n))
    * np.where(rng.random(n) < 0.05, rng.uniform(1.2, 2.0, n), 1.0),
    "quantized": lambda rng, n: np.round(258 + rng.standard_normal(n)) * 0.65,
}


@pytest.mark.parametrize("kind", UNIMODAL)
@pytest.mark.parametrize("n", [10, 50])
def test_unimodal_noise_is_rarely_called_multimodal(kind: str, n: int) -> None:
    rng = np.random.default_rng(n)
    rate = np.mean([find_modes(UNIMODAL[kind](rng, n)).multimodal for _ in range(500)])
    assert rate <= (0.04 if n == 10 else 0.01)


def test_the_getppid_flip_is_found_with_its_modes() -> None:
    rng = np.random.default_rng(5)
    values = np.where(rng.random(60) < 0.3, 218.0, 167.0) * np.exp(rng.normal(0, 0.004, 60))
    modes = find_modes(values)
    assert modes.multimodal and len(modes.centres) == 2
    assert modes.centres[0] == pytest.approx(167, rel=0.01) and modes.centres[1] == pytest.approx(218, rel=0.01)
    assert sum(modes.counts) == 60 and modes.counts[1] == int((values > 190).sum())
    assert np.array_equal(modes.labels, (values > 190).astype(int))
    assert modes.describe("ns") == "2 modes: 166.8 ns (70%) and 217.8 ns (30%)"


def test_three_modes_and_bad_input() -> None:
    values = np.concatenate([np.full(10, 100.0), np.full(10, 130.0), np.full(10, 250.0)])
    assert find_modes(values).centres == pytest.approx((100.0, 130.0, 250.0))
    assert not find_modes([]).multimodal
    with pytest.raises(ValueError, match="positive"):
        find_modes([1.0, -1.0])


def test_trials_that_fall_into_modes_make_a_verdict_inconclusive() -> None:
    base = np.array([167.0, 168.0, 167.5, 218.0, 219.0, 217.5, 167.2, 168.1])
    new = base[:5] * 1.3
    verdict = compare_trials(base[:5] * 0 + 167.0 + np.arange(5) * 0.1, new, direction="lower")
    assert verdict.verdict == REGRESSION
    guarded = guard_trials(verdict, base, new)
    assert guarded.verdict == INCONCLUSIVE and guarded.reason.startswith("multimodal")
    assert "2 modes" in guarded.reason
    plain = guard_trials(verdict, base[:3], new)
    assert plain is verdict


def _flipping(rng: np.random.Generator, centre: float, n: int = 30) -> np.ndarray:
    """A command whose executions flip between two speeds 6% apart (70% fast), 0.3% jitter."""
    slow = rng.random(n) < 0.3
    return centre * np.where(slow, 1.06, 1.0) * (1 + 0.003 * rng.standard_normal(n))


def test_a_change_larger_than_the_distance_between_the_modes_keeps_its_verdict() -> None:
    # `sleep 0.01` against `sleep 0.02` on a machine that flips: each side has modes 6% apart,
    # the change is +100%: trials meeting one mode or the other cannot make that.
    rng = np.random.default_rng(5)
    base, new = _flipping(rng, 0.0101), _flipping(rng, 0.0201)
    assert find_modes(base).multimodal and find_modes(new).multimodal
    verdict = compare_trials(base, new, direction="lower")
    assert verdict.verdict == REGRESSION and verdict.ci_pct[0] > 6.0
    guarded = guard_trials(verdict, base, new)
    assert guarded.verdict == REGRESSION and guarded.reason == verdict.reason
    assert any(w.startswith("modes:") and "larger than the distance between the modes" in w for w in guarded.warnings)


def test_a_change_within_the_distance_between_the_modes_is_still_inconclusive() -> None:
    # +3%: less than the 6% between the modes, so which mode each side met could make it.
    rng = np.random.default_rng(6)
    base = _flipping(rng, 0.0101, 40)
    new = _flipping(rng, 0.0101 * 1.03, 40)
    verdict = compare_trials(base, new, direction="lower")
    guarded = guard_trials(verdict, base, new)
    assert guarded.verdict == INCONCLUSIVE and guarded.reason.startswith("multimodal"), (verdict, guarded)
