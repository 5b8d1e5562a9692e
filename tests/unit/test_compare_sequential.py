"""Adaptive stopping: plan calibration, error rates by simulation (drift, spikes), power, trials saved."""

import numpy as np
import pytest

from kbench.compare.boundaries import OBRIEN_FLEMING, sequential_plan
from kbench.compare.ranks import p_values
from kbench.compare.sequential import CONTINUE, DIFFERENT, SAME, SequentialComparison
from kbench.compare.simulate import interleaved_pairs
from kbench.compare.verdict import INCONCLUSIVE, REASON_BUDGET_EXHAUSTED, REGRESSION

ALPHA = 0.05


def upper_99(rate, experiments):
    """99% one-sided binomial upper bound for an observed rate under a true rate ``rate``."""
    return rate + 2.326 * np.sqrt(rate * (1 - rate) / experiments)


def run(seed, experiments, *, max_trials=20, margin=None, **stream):
    """Decisions, trials used and final verdicts of ``experiments`` adaptive comparisons."""
    rng = np.random.default_rng(seed)
    decisions, trials, verdicts = [], [], []
    for _ in range(experiments):
        comparison = SequentialComparison(direction="lower", margin=margin, max_trials=max_trials)
        base, new = interleaved_pairs(rng, max_trials, **stream)
        for b, n in zip(base, new, strict=True):
            step = comparison.add(b, n)
            if step.done:
                break
        decisions.append(step.decision)
        trials.append(step.trials)
        verdicts.append(step.verdict)
    return np.array(decisions), np.array(trials), verdicts


def fixed_power(n, shift, noise=0.02, experiments=4000, seed=1):
    """Power of the fixed design (n per side, two-sided MWU at ALPHA, right direction), vectorised."""
    rng = np.random.default_rng(seed)
    base = rng.normal(0, noise, (experiments, n))
    new = rng.normal(np.log1p(shift), noise, (experiments, n))
    u = (new[:, :, None] > base[:, None, :]).sum(axis=(1, 2))
    return float(np.mean((p_values(u, n, n) <= ALPHA) & (u > n * n / 2)))


def test_plan_is_calibrated_deterministic_and_less_strict_than_bonferroni():
    plan = sequential_plan(alpha=ALPHA, min_trials=3, max_trials=20)
    assert plan.looks == tuple(range(3, 21))
    assert len(set(plan.nominal_alpha)) == 1  # Pocock: one level for every look
    assert plan.calibrated_error_rate <= ALPHA
    assert ALPHA / len(plan.looks) < plan.nominal_alpha[0] < ALPHA
    assert plan.first_possible_stop() == 5  # 2 / C(10, 5) = 0.0079 is the first attainable p below it
    assert sequential_plan(alpha=ALPHA, min_trials=3, max_trials=20) is plan  # cached, deterministic
    obf = sequential_plan(boundary=OBRIEN_FLEMING)
    assert list(obf.nominal_alpha) == sorted(obf.nominal_alpha)
    assert obf.nominal_alpha[-1] > plan.nominal_alpha[-1]
    with pytest.raises(ValueError):
        sequential_plan(min_trials=5, max_trials=4)


def test_steps_before_the_first_look_and_after_the_end():
    comparison = SequentialComparison(direction="lower", max_trials=6)
    with pytest.raises(ValueError, match="finite and positive"):
        comparison.add(float("nan"), 1000.0)
    first = comparison.add(1000.0, 1000.5)
    assert first.decision == CONTINUE and first.verdict is None
    values = [(1001.0, 999.0), (998.0, 1002.0), (1000.2, 1000.1), (999.5, 1000.7), (1000.9, 999.2)]
    for b, n in values:
        step = comparison.add(b, n)
    assert step.decision == INCONCLUSIVE and step.trials == 6
    assert step.verdict is not None and step.verdict.reason.startswith(REASON_BUDGET_EXHAUSTED)
    assert not np.isnan(step.verdict.ks_p_value)
    with pytest.raises(ValueError, match="already stopped"):
        comparison.add(1.0, 1.0)


@pytest.mark.parametrize(
    ("name", "stream"),
    [
        ("plain", {}),
        ("drift", {"drift_per_trial": 0.002}),  # +4.8% over 24 slots, > 2x the noise
        ("spikes", {"spike_probability": 0.05, "spike_size": 0.5}),
    ],
)
def test_aa_false_positive_rate_stays_below_alpha(name, stream):
    experiments = 1200
    decisions, _, _ = run(100 + len(name), experiments, max_trials=12, noise=0.02, **stream)
    rate = float(np.mean(decisions == DIFFERENT))
    assert rate <= upper_99(ALPHA, experiments), f"{name}: A/A false-positive rate {rate:.3f}"


def test_naive_repeated_testing_would_not_keep_alpha():
    # The same looks at plain p <= 0.05 each time: the reason for the calibrated plan.
    rng = np.random.default_rng(3)
    experiments, looks = 4000, range(3, 13)
    base, new = rng.random((experiments, 12)), rng.random((experiments, 12))
    rejected = np.zeros(experiments, dtype=bool)
    for n in looks:
        u = (new[:, :n, None] > base[:, None, :n]).sum(axis=(1, 2))
        rejected |= p_values(u, n, n) <= ALPHA
    assert rejected.mean() > 2 * ALPHA


def test_power_at_a_3_percent_shift_with_2_percent_noise():
    decisions, _, verdicts = run(7, 500, max_trials=20, shift=0.03, noise=0.02)
    assert np.mean(decisions == DIFFERENT) >= 0.8
    assert all(v.verdict == REGRESSION for v, d in zip(verdicts, decisions, strict=True) if d == DIFFERENT)


def test_same_within_margin_keeps_its_error_rate_and_is_reached_when_true():
    experiments = 1000
    at_margin, _, _ = run(11, experiments, max_trials=20, margin=0.02, shift=0.02, noise=0.02)
    assert np.mean(at_margin == SAME) <= upper_99(ALPHA, experiments)
    quiet, trials, _ = run(12, 300, max_trials=20, margin=0.02, shift=0.0, noise=0.005)
    assert np.mean(quiet == SAME) >= 0.9 and trials.mean() < 10


def test_adaptive_uses_fewer_trials_than_a_fixed_design_of_equal_error_rates():
    design = run(21, 400, max_trials=20, shift=0.03, noise=0.02)
    clear = run(22, 400, max_trials=20, shift=0.10, noise=0.02)
    power = float(np.mean(design[0] == DIFFERENT))
    # the smallest fixed design with at least that power at the same alpha
    fixed_n = next(n for n in range(5, 41) if fixed_power(n, 0.03) >= power)
    average_design, average_clear = design[1].mean(), clear[1].mean()
    assert average_design < fixed_n, (average_design, fixed_n)
    assert fixed_n / average_clear >= 2.0, (fixed_n, average_clear)
