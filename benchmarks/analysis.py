"""Time kbench.stats.summarize() (which includes the median CI) on 10**7 samples.

Usage: python benchmarks/analysis.py [--n N] [--repeat R]
Prints the median wall time of R repetitions; the goal is <= 1 s for 10**7
lognormal samples (a stand-in for per-op latencies in ns).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from kbench.stats import summarize

GOAL_SECONDS = 1.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**7, help="number of samples")
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (median reported)")
    args = parser.parse_args(argv)

    rng = np.random.default_rng(20240501)
    samples = rng.lognormal(mean=np.log(800.0), sigma=0.4, size=args.n)

    timings = []
    for _ in range(args.repeat):
        start = time.perf_counter()
        summary = summarize(samples)
        timings.append(time.perf_counter() - start)
    median_seconds = statistics.median(timings)

    print(f"summarize()+median CI, n={args.n:,} lognormal samples, {args.repeat} repetitions")
    print(
        f"  median {median_seconds:.3f} s  (min {min(timings):.3f} s, max {max(timings):.3f} s)"
        f"  goal <= {GOAL_SECONDS:.1f} s: {'met' if median_seconds <= GOAL_SECONDS else 'MISSED'}"
    )
    print(
        f"  p50={summary.p50:.1f} median_ci=({summary.median_ci[0]:.2f}, {summary.median_ci[1]:.2f})"
        f" steady_state_index={summary.steady_state_index} warnings={len(summary.warnings)}"
    )
    return 0 if median_seconds <= GOAL_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
