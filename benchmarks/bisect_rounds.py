"""How many measurement rounds a bisection takes, and how often it names the right commit.

Usage: python benchmarks/bisect_rounds.py [--sims 50] [--sizes 16 64 256] [--sigma 0.02]
                                          [--shift 0.05] [--trials 5] [--seed 0] [--json-out FILE]

Simulation (no machine involved): N commits after the good one, the culprit drawn
uniformly among them; every trial statistic is lognormal around its commit's mean with
``--sigma`` (2%: a typical spread of trial medians of a ~20 ms program on this VM), and
from the culprit on the mean is ``--shift`` (+5%) higher. The real driver
(``kbench.bisect.driver.Bisector``, with its check, bracketed steps, extra batch, weak
decisions and re-check) runs on this simulated lab.

Columns: N; ceil(log2 N) (the steps of an exact binary search); mean commits measured
(search steps); mean measurement rounds (bracketed batches of --trials trials of the
commit, G and B, counting extra batches and the re-check; the initial check is not
counted); mean trials in all (check included); the share of weak decisions; the rate
of correct culprits with its 95% Wilson interval.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from kbench.bisect.driver import DONE, Bisector, BisectState, Settings


class SimulatedLab:
    def __init__(self, means: dict[str, float], sigma: float, rng: np.random.Generator):
        self.means = means
        self.sigma = sigma
        self.rng = rng
        self.trials = 0
        self.rounds = 0

    def build(self, commit: str) -> str | None:
        return None

    def _draw(self, commit: str, n: int) -> list[float]:
        self.trials += n
        return list(self.means[commit] * self.rng.lognormal(0.0, self.sigma, n))

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        self.rounds += 1
        return {commit: self._draw(commit, n) for commit in commits}

    def pair(self, good: str, bad: str) -> tuple[list[float], list[float]]:
        return self._draw(good, 10), self._draw(bad, 10)

    def describe(self, commit: str) -> dict[str, str]:
        return {"sha": commit, "subject": commit, "author": "sim"}


def simulate(size: int, sims: int, sigma: float, shift: float, trials: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng([seed, size])
    steps, rounds, total, weak, correct, finished = [], [], [], 0, 0, 0
    decisions = 0
    for _ in range(sims):
        commits = [f"c{i}" for i in range(1, size + 1)]
        culprit = int(rng.integers(0, size))
        means = {"c0": 1.0} | {c: (1.0 + shift if i >= culprit else 1.0) for i, c in enumerate(commits)}
        lab = SimulatedLab(means, sigma, rng)
        state = BisectState(good="c0", bad=commits[-1], commits=commits)
        Bisector(lab, state, Settings(trials=trials)).run()
        finished += state.status == DONE
        search = [s for s in state.steps if s["phase"] == "search"]
        steps.append(len(search))
        rounds.append(lab.rounds)
        total.append(lab.trials)
        weak += sum(bool(s["weak"]) for s in search)
        decisions += len(search)
        if state.result and state.result.get("first_bad") and state.result["first_bad"]["sha"] == commits[culprit]:
            correct += 1
    low, high = _wilson(correct, sims)
    return {
        "N": size, "log2N": math.ceil(math.log2(size)), "sims": sims, "finished": finished,
        "steps": float(np.mean(steps)), "rounds": float(np.mean(rounds)), "rounds_max": int(np.max(rounds)),
        "trials": float(np.mean(total)), "weak_share": weak / max(decisions, 1),
        "correct": correct / sims, "correct_ci": [low, high],
    }


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=50)
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--sigma", type=float, default=0.02)
    parser.add_argument("--shift", type=float, default=0.05)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    rows = [simulate(n, args.sims, args.sigma, args.shift, args.trials, args.seed) for n in args.sizes]
    print(f"bisection: sigma {100 * args.sigma:g}% lognormal, culprit +{100 * args.shift:g}%, "
          f"{args.trials} trials per batch, {args.sims} bisections per size")
    print(f"{'N':>5} {'ceil log2 N':>11} {'steps':>6} {'rounds':>7} {'max':>4} {'trials':>7} {'weak':>6} "
          f"{'correct':>8} {'95% CI':>15}")
    for r in rows:
        low, high = r["correct_ci"]
        print(f"{r['N']:>5} {r['log2N']:>11} {r['steps']:>6.2f} {r['rounds']:>7.2f} {r['rounds_max']:>4} "
              f"{r['trials']:>7.1f} {100 * r['weak_share']:>5.1f}% {100 * r['correct']:>7.1f}% "
              f"[{100 * low:5.1f}, {100 * high:5.1f}]%")
    if args.json_out:
        with open(args.json_out, "w") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
