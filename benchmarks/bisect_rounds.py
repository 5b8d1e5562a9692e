"""How many measurement rounds a bisection takes, and how often it names the right commit.

Usage: python benchmarks/bisect_rounds.py [--sims 200] [--sizes 16 64 256] [--sigma 0.02]
           [--shift 0.05] [--tails 5] [--drift 0.002] [--trials 3] [--max-trials 15]
           [--error 1e-3] [--seed 0] [--json-out FILE]

Simulation (no machine involved): N commits after the good one, the culprit drawn
uniformly among them; every trial statistic is its commit's mean times exp(sigma * e),
e a Student t variable with ``--tails`` degrees of freedom scaled to unit variance
(heavier tails than a normal: the occasional disturbed trial), times the machine's
speed, a random walk that moves by ``--drift`` (relative) per trial measured; from the
culprit on the mean is ``--shift`` higher. The real driver (``kbench.bisect.driver.
Bisector``: check, bracketed sequential steps, weak decisions, re-check) runs on this
simulated lab.

Columns: N; ceil(log2 N) (the steps of an exact binary search); rounds: commits
measured, re-checks included (mean and max); trials: all trial statistics measured
(commit, G and B in every round, and the initial check); the share of weak decisions;
the rate of correct culprits with its 95 % Wilson interval; the share of bisections
done within ceil(log2 N) + 2 rounds.
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
    def __init__(self, means: dict[str, float], sigma: float, tails: float, drift: float, rng: np.random.Generator):
        self.means = means
        self.sigma = sigma
        self.tails = tails
        self.drift = drift
        self.rng = rng
        self.trials = 0
        self.speed = 0.0  # log of the machine's speed factor

    def build(self, commit: str) -> str | None:
        return None

    def _noise(self) -> float:
        if math.isinf(self.tails):
            return float(self.rng.normal())
        return float(self.rng.standard_t(self.tails) * math.sqrt((self.tails - 2) / self.tails))

    def _draw(self, commit: str, n: int) -> list[float]:
        values = []
        for _ in range(n):
            self.trials += 1
            self.speed += self.drift * float(self.rng.normal())
            values.append(self.means[commit] * math.exp(self.speed + self.sigma * self._noise()))
        return values

    def round(self, commits: Sequence[str], n: int) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {commit: [] for commit in commits}
        for _ in range(n):
            for index in self.rng.permutation(len(commits)):
                out[commits[int(index)]] += self._draw(commits[int(index)], 1)
        return out

    def pair(self, good: str, bad: str) -> tuple[list[float], list[float]]:
        both = self.round([good, bad], 10)
        return both[good], both[bad]

    def describe(self, commit: str) -> dict[str, str]:
        return {"sha": commit, "subject": commit, "author": "sim"}


def simulate(size: int, args: argparse.Namespace) -> dict[str, Any]:
    rng = np.random.default_rng([args.seed, size])
    settings = Settings(trials=args.trials, max_trials=args.max_trials, error=args.error)
    rounds, total, weak, correct, finished, within, decisions = [], [], 0, 0, 0, 0, 0
    budget = math.ceil(math.log2(size)) + 2
    for _ in range(args.sims):
        commits = [f"c{i}" for i in range(1, size + 1)]
        culprit = int(rng.integers(0, size))
        means = {"c0": 1.0} | {c: (1.0 + args.shift if i >= culprit else 1.0) for i, c in enumerate(commits)}
        lab = SimulatedLab(means, args.sigma, args.tails, args.drift, rng)
        state = BisectState(good="c0", bad=commits[-1], commits=commits)
        Bisector(lab, state, settings).run()
        finished += state.status == DONE
        measured = [s for s in state.steps if s["verdict"] != "skip"]
        rounds.append(len(measured))
        total.append(lab.trials)
        weak += sum(bool(s["weak"]) for s in measured)
        decisions += len(measured)
        right = bool(state.result and state.result.get("first_bad")
                     and state.result["first_bad"]["sha"] == commits[culprit])
        correct += right
        within += right and len(measured) <= budget
    low, high = _wilson(correct, args.sims)
    return {
        "N": size, "log2N": math.ceil(math.log2(size)), "sims": args.sims, "finished": finished,
        "rounds": float(np.mean(rounds)), "rounds_max": int(np.max(rounds)),
        "trials": float(np.mean(total)), "weak_share": weak / max(decisions, 1),
        "correct": correct / args.sims, "correct_ci": [low, high], "within_budget": within / args.sims,
    }


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--sigma", type=float, default=0.02)
    parser.add_argument("--shift", type=float, default=0.05)
    parser.add_argument("--tails", type=float, default=5.0, help="t degrees of freedom (inf: normal)")
    parser.add_argument("--drift", type=float, default=0.002)
    parser.add_argument("--trials", type=int, default=Settings.trials)
    parser.add_argument("--max-trials", type=int, default=Settings.max_trials)
    parser.add_argument("--error", type=float, default=Settings.error)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    rows = [simulate(n, args) for n in args.sizes]
    print(f"bisection: sigma {100 * args.sigma:g}% (t, {args.tails:g} df), drift {100 * args.drift:g}%/trial, "
          f"culprit {100 * args.shift:+g}%, {args.trials}..{args.max_trials} rounds per commit, error "
          f"{args.error:g}, {args.sims} bisections per size")
    print(f"{'N':>5} {'ceil log2 N':>11} {'rounds':>7} {'max':>4} {'trials':>7} {'weak':>6} "
          f"{'correct':>8} {'95% CI':>15} {'<= log2N+2':>10}")
    for r in rows:
        low, high = r["correct_ci"]
        print(f"{r['N']:>5} {r['log2N']:>11} {r['rounds']:>7.2f} {r['rounds_max']:>4} "
              f"{r['trials']:>7.1f} {100 * r['weak_share']:>5.1f}% {100 * r['correct']:>7.1f}% "
              f"[{100 * low:5.1f}, {100 * high:5.1f}]% {100 * r['within_budget']:>9.1f}%")
    if args.json_out:
        with open(args.json_out, "w") as handle:
            json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
