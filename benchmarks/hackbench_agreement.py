"""kbench's hackbench wrapper vs hackbench run by hand: do they report the same time?

Usage: .venv/bin/python benchmarks/hackbench_agreement.py [--rounds 10] [--groups 4] [--loops 200]

Alternates (A/B, A first on even rounds, B first on odd ones) `kbench.suites.run_suite`
and a plain subprocess of the same hackbench command line parsed with a regex written
here, then prints both medians and their ratio (goal: within 5%).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess

from kbench.suites import build_command, run_suite

TIME = re.compile(r"^Time:\s*([0-9.]+)", re.MULTILINE)


def by_hand(argv: list[str]) -> float:
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    match = TIME.search(out)
    assert match, out
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--groups", type=int, default=4)
    parser.add_argument("--loops", type=int, default=200)
    args = parser.parse_args()
    params = {"groups": args.groups, "loops": args.loops}
    argv = build_command("hackbench.pipe-process", params)
    wrapped, manual = [], []
    for i in range(args.rounds):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for which in order:
            if which == 0:
                result = run_suite("hackbench.pipe-process", params, iterations=1)
                wrapped.append(result.values("hackbench.pipe-process.time")[0])
            else:
                manual.append(by_hand(argv))
    a, b = statistics.median(wrapped), statistics.median(manual)
    print(f"command: {' '.join(argv)}  ({args.rounds} rounds, alternated)")
    print(f"kbench run_suite  median {a:.4f} s  (min {min(wrapped):.4f}, max {max(wrapped):.4f})")
    print(f"by hand           median {b:.4f} s  (min {min(manual):.4f}, max {max(manual):.4f})")
    print(f"ratio kbench/by-hand {a / b:.3f}  (goal within 5%: {'met' if abs(a / b - 1) <= 0.05 else 'NOT met'})")


if __name__ == "__main__":
    main()
