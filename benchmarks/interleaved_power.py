"""Which test of interleaved blocks keeps its error rate here, and what it costs in power.

Usage: python benchmarks/interleaved_power.py [--experiments E] [--blocks N] [--noise S] [--seed X]

Simulated interleaved comparisons (``kbench.compare.simulate.interleaved_blocks``: mirrored
blocks of slots, ABBA or BAAB at random, one log-ratio d per block) on the noise this VM
shows and worse: per-slot noise S (0.4% is the CPU time of a 100 ms loop here), heavy
tails (t3), a drifting machine (random walk), spikes (+50% in 5% of slots), per-process
modes (10% of slots +30%, like getppid's 167/218 ns flip; and +4% in 11%, like the CPU
loop's) and slow phases (a mode that stays).

Per scenario, at a fixed N blocks and alpha = 0.05, the rate of "different" of four tests
of d against 0: Wilcoxon signed-rank (what kbench uses), the sign test, Student's t, and t
with a Newey-West (HAC, lag 3) variance that allows for blocks correlated by slow drift.
In A/A rows that rate is the false-positive rate (goal <= alpha within binomial error);
in +1% rows it is the power. Then kbench's whole design - ``PairedSequential``: looks at
20..100% of the blocks with alpha spending, margin ±0.5% - as P(different), P(same) and
the mean blocks used.
"""

from __future__ import annotations

import argparse
import math
import sys
import time

import numpy as np
from scipy import stats

from kbench.compare.paired import PairedSequential
from kbench.compare.sequential import DIFFERENT, SAME
from kbench.compare.signed_ranks import signed_rank_test
from kbench.compare.simulate import interleaved_blocks, look_until_done

ALPHA = 0.05
MARGIN = 0.005

SCENARIOS: list[tuple[str, dict[str, object]]] = [
    ("A/A", {}),
    ("A/A heavy tails t3", {"tails": 3}),
    ("A/A drift", {"walk": 0.002}),
    ("A/A spikes 5% +50%", {"spike_probability": 0.05}),
    ("A/A modes 10% +30%", {"flip_probability": 0.10}),
    ("A/A modes 11% +4%", {"flip_probability": 0.11, "flip_size": 0.04}),
    ("A/A slow phases", {"flip_probability": 0.05, "flip_persistent": True}),
    ("A/A all of it", {"tails": 3, "walk": 0.002, "spike_probability": 0.05, "flip_probability": 0.10}),
    ("+1%", {"shift": 0.01}),
    ("+1% heavy tails", {"shift": 0.01, "tails": 3}),
    ("+1% spikes", {"shift": 0.01, "spike_probability": 0.05}),
    ("+1% modes 10% +30%", {"shift": 0.01, "flip_probability": 0.10}),
    ("+1% all of it", {"shift": 0.01, "tails": 3, "walk": 0.002, "spike_probability": 0.05,
                       "flip_probability": 0.10}),
    ("+0.5% = margin", {"shift": MARGIN}),
]


def newey_west_p(d: np.ndarray, lag: int = 3) -> float:
    n = d.size
    centred = d - d.mean()
    variance = float(centred @ centred) / n
    for k in range(1, lag + 1):
        variance += 2 * (1 - k / (lag + 1)) * float(centred[k:] @ centred[:-k]) / n
    se = math.sqrt(max(variance, 1e-300) / n)
    return float(2 * stats.t.sf(abs(d.mean()) / se, n - 1))


def fixed_tests(d: np.ndarray) -> dict[str, float]:
    positives = int((d > 0).sum())
    return {
        "signed-rank": signed_rank_test(d).p_value,
        "sign": float(stats.binomtest(positives, int((d != 0).sum()), 0.5).pvalue),
        "t": float(stats.ttest_1samp(d, 0.0).pvalue),
        "t HAC": newey_west_p(d),
    }


def sequential(d: np.ndarray, base: np.ndarray, new: np.ndarray) -> tuple[str, int]:
    step = look_until_done(PairedSequential(direction="lower", alpha=ALPHA, margin=MARGIN), d, base, new)
    return step.decision, step.trials


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--experiments", type=int, default=2000)
    parser.add_argument("--blocks", type=int, default=30, help="blocks per comparison (20 s here: 25-40)")
    parser.add_argument("--noise", type=float, default=0.004, help="relative noise of one slot")
    parser.add_argument("--seed", type=int, default=20261123)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    bound = ALPHA + 3.090 * math.sqrt(ALPHA * (1 - ALPHA) / args.experiments)
    print(f"{args.experiments} experiments per scenario, {args.blocks} blocks, slot noise {100 * args.noise:.1f}%, "
          f"alpha {ALPHA}; 99.9% binomial bound for a rate at alpha: {bound:.3f}\n")
    tests = ("signed-rank", "sign", "t", "t HAC")
    header = (f"{'scenario':<22}" + "".join(f"{name:>12}" for name in tests)
              + f" | {'kbench P(diff)':>14} {'P(same)':>8} {'blocks':>7}")
    print(header)
    print("-" * len(header))
    held = dict.fromkeys(tests, True)
    kbench_ok = True
    for name, stream in SCENARIOS:
        rejections = dict.fromkeys(tests, 0)
        different = same = used = 0
        for _ in range(args.experiments):
            d, base, new = interleaved_blocks(rng, args.blocks, noise=args.noise, **stream)  # type: ignore[arg-type]
            for test, p in fixed_tests(d).items():
                rejections[test] += p <= ALPHA
            decision, blocks = sequential(d, base, new)
            different += decision == DIFFERENT
            same += decision == SAME
            used += blocks
        rates = {test: count / args.experiments for test, count in rejections.items()}
        print(f"{name:<22}" + "".join(f"{rates[t]:>12.3f}" for t in tests)
              + f" | {different / args.experiments:>14.3f} {same / args.experiments:>8.3f} "
              f"{used / args.experiments:>7.1f}", flush=True)
        if name.startswith("A/A"):
            for test in tests:
                held[test] &= rates[test] <= bound
            kbench_ok &= different / args.experiments <= bound
        if "= margin" in name:
            kbench_ok &= same / args.experiments <= bound
    print("\nerror rate held in every A/A scenario: "
          + ", ".join(f"{t} {'yes' if ok else 'NO'}" for t, ok in held.items())
          + f"; kbench's sequential design {'yes' if kbench_ok else 'NO'}   [{time.perf_counter() - started:.0f} s]")
    return 0 if kbench_ok else 1


if __name__ == "__main__":
    sys.exit(main())
