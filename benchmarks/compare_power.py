"""Time to verdict: adaptive stopping vs a fixed trial count at equal error rates.

Usage: python benchmarks/compare_power.py [--experiments E] [--budget N] [--noise S] [--seed X]

Simulated interleaved trial streams (``kbench.compare.simulate``: lognormal
trial statistics with relative noise S, randomised A/B order in each pair)
are judged two ways, both at alpha = 0.05:

- adaptive: ``SequentialComparison`` (Pocock plan, looks after every pair from
  3 trials, budget N per side), stopping at the first safe decision;
- fixed: ``compare_trials`` on the first n pairs, where n is the smallest count
  whose power at the design effect (3%) is at least the adaptive design's
  power there ("equal error rates": same alpha, same power). The last column
  compares with the smaller fixed design of only 80% power at 3% (n80).

Printed per scenario: rate of "different" (false-positive rate in A/A rows,
power otherwise), rate of "same within margin" (rows with a margin; where the
true change equals the margin it is an error rate, <= alpha), average trials
per side, and fixed / adaptive trials. The goal is >= 2x fewer trials on
average for clear differences with every error rate <= alpha (within binomial
error). Without a margin an A/A comparison runs to the budget: "not
significant" is no reason to stop.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from kbench.compare.boundaries import sequential_plan
from kbench.compare.judge import compare_trials
from kbench.compare.ranks import p_values
from kbench.compare.sequential import DIFFERENT, SAME, SequentialComparison
from kbench.compare.simulate import interleaved_pairs

ALPHA = 0.05
DESIGN_SHIFT = 0.03
GOAL_RATIO = 2.0

SCENARIOS: list[tuple[str, dict[str, float]]] = [
    ("A/A", {}),
    ("A/A + drift 0.2%/trial", {"drift_per_trial": 0.002}),
    ("A/A + 5% spikes +50%", {"spike_probability": 0.05, "spike_size": 0.5}),
    ("+3% (design)", {"shift": 0.03}),
    ("+6%", {"shift": 0.06}),
    ("+10% (clear)", {"shift": 0.10}),
    ("+10% + drift + spikes", {"shift": 0.10, "drift_per_trial": 0.002, "spike_probability": 0.05}),
    ("A/A, margin ±2%", {"margin": 0.02}),
    ("+2% = margin ±2%", {"shift": 0.02, "margin": 0.02}),
]


def adaptive(
    rng: np.random.Generator, experiments: int, budget: int, stream: dict[str, float]
) -> tuple[float, float, float]:
    """(rate of DIFFERENT, rate of SAME, average trials per side) of the adaptive design."""
    different, same, trials = 0, 0, 0
    stream = dict(stream)
    margin = stream.pop("margin", None)
    for _ in range(experiments):
        comparison = SequentialComparison(direction="lower", alpha=ALPHA, margin=margin, max_trials=budget)
        base, new = interleaved_pairs(rng, budget, **stream)
        for b, n in zip(base, new, strict=True):
            step = comparison.add(b, n)
            if step.done:
                break
        different += step.decision == DIFFERENT
        same += step.decision == SAME
        trials += step.trials
    return different / experiments, same / experiments, trials / experiments


def fixed(rng: np.random.Generator, experiments: int, n: int, stream: dict[str, float]) -> float:
    """Rate of regression/improvement verdicts of ``compare_trials`` on n pairs."""
    significant = 0
    stream = dict(stream)
    margin = stream.pop("margin", None)
    for _ in range(experiments):
        base, new = interleaved_pairs(rng, n, **stream)
        significant += compare_trials(base, new, direction="lower", alpha=ALPHA, margin=margin).significant
    return significant / experiments


def fixed_power(n: int, shift: float, noise: float, experiments: int = 20_000) -> float:
    """Power of the fixed design at n per side (vectorised exact Mann-Whitney, right direction)."""
    rng = np.random.default_rng(99)
    base = rng.normal(0.0, noise, (experiments, n))
    new = rng.normal(math.log1p(shift), noise, (experiments, n))
    u = (new[:, :, None] > base[:, None, :]).sum(axis=(1, 2))
    return float(np.mean((p_values(u, n, n) <= ALPHA) & (u > n * n / 2)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--experiments", type=int, default=2000, help="simulated comparisons per scenario")
    parser.add_argument("--budget", type=int, default=20, help="adaptive budget: trials per side")
    parser.add_argument("--noise", type=float, default=0.02, help="relative noise of a trial statistic")
    parser.add_argument("--seed", type=int, default=20240613)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    plan = sequential_plan(alpha=ALPHA, max_trials=args.budget)
    print(
        f"plan: {plan.describe()}; nominal alpha per look {plan.nominal_alpha[0]:.4f}, "
        f"first possible stop at {plan.first_possible_stop()} trials"
    )

    rng = np.random.default_rng(args.seed)
    results = {
        name: adaptive(rng, args.experiments, args.budget, {"noise": args.noise, **stream})
        for name, stream in SCENARIOS
    }
    design_power = results["+3% (design)"][0]
    n_equal = next(n for n in range(4, 200) if fixed_power(n, DESIGN_SHIFT, args.noise) >= design_power)
    n80 = next(n for n in range(4, 200) if fixed_power(n, DESIGN_SHIFT, args.noise) >= 0.80)
    print(
        f"fixed design of equal power at +{DESIGN_SHIFT:.0%} ({design_power:.1%}): n = {n_equal} per side "
        f"(for 80% power: n = {n80})"
    )
    bound = ALPHA + 3.090 * math.sqrt(ALPHA * (1 - ALPHA) / args.experiments)
    print(
        f"noise {args.noise:.0%}, alpha {ALPHA}, {args.experiments} experiments per scenario; "
        f"99.9% binomial bound for an A/A rate at alpha: {bound:.3f}\n"
    )

    header = (
        f"{'scenario':<24} {'adaptive P(diff)':>16} {'P(same)':>7} {'avg trials':>10} "
        f"{'fixed P(diff)':>13} {'trials':>6} {'fixed/adaptive':>14} {f'n80={n80}/adaptive':>16}"
    )
    print(header)
    print("-" * len(header))
    met = True
    for name, stream in SCENARIOS:
        rate, same, average = results[name]
        fixed_rate = fixed(rng, args.experiments, n_equal, {"noise": args.noise, **stream})
        ratio = n_equal / average
        print(
            f"{name:<24} {rate:>16.3f} {same:>7.3f} {average:>10.2f} {fixed_rate:>13.3f} {n_equal:>6d} {ratio:>13.2f}x"
            f" {n80 / average:>15.2f}x"
        )
        if name.startswith("A/A"):
            met &= rate <= bound
        if "= margin" in name:
            met &= same <= bound
        if name.startswith("+10%"):
            met &= ratio >= GOAL_RATIO
    print(
        f"\ngoal (A/A rate <= alpha within binomial error, >= {GOAL_RATIO:.0f}x fewer trials for clear "
        f"differences): {'met' if met else 'MISSED'}   [{time.perf_counter() - started:.0f} s]"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
