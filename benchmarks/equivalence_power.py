"""How often identical sides end "no change", and how often a change of exactly the margin does.

Usage: python benchmarks/equivalence_power.py [--experiments E] [--blocks N] [--noise S] [--seed X]

kbench's sequential interleaved design (``PairedSequential``: looks at 20, 40, 60, 80 and
100 % of the blocks, the difference test on two-sided Pocock-type alpha spending, margin
±0.5 %) with three ways of deciding "no change":

- interval: the difference test's own two-sided interval at each look's nominal level
  must lie within the margin (each one-sided error at about alpha/2: conservative);
- pocock: two one-sided tests with their own one-sided Pocock-type spending of alpha;
- obrien-fleming: the same with O'Brien-Fleming-type spending (kbench's default), which
  keeps most of alpha for the late looks.

Per design and scenario (simulated slots as in ``kbench.compare.simulate``): P(no change),
P(different), P(inconclusive at the budget), the mean blocks used. Goals: A/A P(no change)
>= 0.95 where the noise allows it; P(no change) at a true change of ±margin <= alpha (within
binomial error: the 99.9 % bound is printed); P(different) at A/A <= alpha.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np

from kbench.compare.paired import EQUIVALENCE_DESIGNS, PairedSequential
from kbench.compare.sequential import DIFFERENT, SAME
from kbench.compare.simulate import interleaved_blocks, look_until_done

ALPHA = 0.05
MARGIN = 0.005

SCENARIOS: list[tuple[str, dict[str, object]]] = [
    ("A/A", {}),
    ("A/A heavy tails t3", {"tails": 3}),
    ("A/A drift", {"walk": 0.002}),
    ("A/A modes 11% +4%", {"flip_probability": 0.11, "flip_size": 0.04}),
    ("+0.25%", {"shift": 0.0025}),
    ("+0.5% = margin", {"shift": MARGIN}),
    ("-0.5% = margin", {"shift": -MARGIN}),
    ("+0.5% = margin, t3", {"shift": MARGIN, "tails": 3}),
    ("+1%", {"shift": 0.01}),
]


def run(design: str, d: np.ndarray, base: np.ndarray, new: np.ndarray) -> tuple[str, int]:
    comparison = PairedSequential(direction="lower", alpha=ALPHA, margin=MARGIN, equivalence=design)
    step = look_until_done(comparison, d, base, new)
    return step.decision, step.trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--experiments", type=int, default=2000)
    parser.add_argument("--blocks", type=int, default=60, help="blocks of a whole budget")
    parser.add_argument("--noise", type=float, default=0.008, help="relative noise of one slot")
    parser.add_argument("--seed", type=int, default=20261126)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    bound = ALPHA + 3.090 * math.sqrt(ALPHA * (1 - ALPHA) / args.experiments)
    print(f"{args.experiments} experiments per scenario and design, {args.blocks} blocks, slot noise "
          f"{100 * args.noise:.1f}%, alpha {ALPHA}, margin ±{100 * MARGIN:g}%; 99.9% binomial bound at alpha: "
          f"{bound:.3f}\n")
    header = f"{'scenario':<22} {'design':<15} {'P(no change)':>12} {'P(diff)':>8} {'P(inconcl.)':>11} {'blocks':>7}"
    print(header)
    print("-" * len(header))
    held = True
    for name, stream in SCENARIOS:
        # the same simulated comparisons for every design
        rng = np.random.default_rng(args.seed)
        data = [interleaved_blocks(rng, args.blocks, noise=args.noise, **stream)  # type: ignore[arg-type]
                for _ in range(args.experiments)]
        for design in EQUIVALENCE_DESIGNS:
            same = different = used = 0
            for d, base, new in data:
                decision, blocks = run(design, d, base, new)
                same += decision == SAME
                different += decision == DIFFERENT
                used += blocks
            n = args.experiments
            print(f"{name:<22} {design:<15} {same / n:>12.3f} {different / n:>8.3f} "
                  f"{(n - same - different) / n:>11.3f} {used / n:>7.1f}", flush=True)
            if "= margin" in name:
                held &= same / n <= bound
            if name.startswith("A/A"):
                held &= different / n <= bound
    print(f"\nerror rates held (A/A different, ±margin no change <= {bound:.3f}): {'yes' if held else 'NO'}"
          f"   [{time.perf_counter() - started:.0f} s]")
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
