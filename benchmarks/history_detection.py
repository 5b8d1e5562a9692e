"""Change-point detection: speed over 1,000 series × 1,000 points, and accuracy under noise.

Usage: .venv/bin/python benchmarks/history_detection.py [--series 1000] [--points 1000] [--quick]

Speed (goal ≤ 10 s): ``detect_many`` over simulated series (0.5 % run-to-run noise, 2 %
disturbed runs, a 3 % step in every other series), on one process and on every CPU,
side by side; with ``--otava``, Apache Otava 0.8's ``compute_change_points`` on the same
series beside kbench's own method (``pip install --no-deps apache-otava`` first: it is no
longer a dependency) and how often their change points agree.

Accuracy at the default settings (window 50, p < 0.001, winsorized at 3 robust SDs) and on
the raw values, on seeded simulated series: false change points per 100 points (A/A,
spikes, drift, both) and how often a 2 % step is found within ±1 run once 5 runs follow it.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from kbench.history.changes import DetectionSettings, detect, detect_many, winsorized


def simulated(rng: np.random.Generator, n: int, cv: float, spikes: float = 0.0, drift: float = 0.0) -> np.ndarray:
    values = 100.0 * (1.0 + cv * rng.standard_normal(n)) * (1.0 + drift * np.linspace(0.0, 1.0, n))
    hit = rng.random(n) < spikes
    values[hit] *= 1.0 + rng.uniform(0.10, 0.50, hit.sum())
    return values


def speed(series: int, points: int) -> None:
    rng = np.random.default_rng(1)
    data = []
    for i in range(series):
        values = simulated(rng, points, 0.005, spikes=0.02)
        if i % 2:
            values[rng.integers(points // 4, 3 * points // 4):] *= 1.03
        data.append(values)
    cpus = len(os.sched_getaffinity(0))
    timings = {}
    for workers in (1, cpus):
        start = time.perf_counter()
        found = detect_many(data, workers=workers)
        timings[workers] = time.perf_counter() - start
        print(f"{series} series x {points} points, {workers} process(es): {timings[workers]:.1f} s "
              f"({1000 * timings[workers] / series:.1f} ms per series, {sum(map(len, found))} change points)",
              flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")


def beside_otava(series: int, points: int) -> None:
    """kbench's method and Otava's on the same series: time (one process) and agreement."""
    from otava.analysis import compute_change_points

    rng = np.random.default_rng(2)
    data = [simulated(rng, points, 0.005, spikes=0.02) for _ in range(series)]
    for values in data[1::2]:
        values[rng.integers(points // 4, 3 * points // 4):] *= 1.03
    settings = DetectionSettings()
    start = time.perf_counter()
    ours = [[c.index for c in detect(values, settings)] for values in data]
    mine_s = time.perf_counter() - start
    start = time.perf_counter()
    theirs = []
    for values in data:
        tested = winsorized(values, 3.0)
        found, _ = compute_change_points(tested.tolist(), window_len=50, max_pvalue=0.001)
        theirs.append(sorted(int(p.index) for p in found))
    otava_s = time.perf_counter() - start
    same = sum(a == b for a, b in zip(ours, theirs, strict=True))
    print(f"{series} series x {points} points on one process: kbench {mine_s:.2f} s, Otava {otava_s:.2f} s; "
          f"the same change points in {same} of {series} series "
          f"(kbench {sum(map(len, ours))}, Otava {sum(map(len, theirs))} in all)", flush=True)


def accuracy(settings: DetectionSettings, label: str, repeats: int) -> None:
    rng = np.random.default_rng(7)
    cells = []
    for cv in (0.005, 0.01):
        for kw in ({}, {"spikes": 0.02}, {"drift": 0.05}, {"spikes": 0.05, "drift": 0.05}):
            false = sum(len(detect(simulated(rng, 1000, cv, **kw), settings)) for _ in range(repeats))
            cells.append(f"{100 * false / (1000 * repeats):.2f}")
        for spikes in (0.0, 0.02):
            found = 0
            for _ in range(10 * repeats):
                values = np.r_[simulated(rng, 100, cv, spikes), 1.02 * simulated(rng, 5, cv, spikes)]
                found += any(abs(c.index - 100) <= 1 for c in detect(values, settings))
            cells.append(f"{100 * found / (10 * repeats):.0f}%")
    print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--points", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=30, help="simulated series per accuracy cell (×10 for steps)")
    parser.add_argument("--quick", action="store_true", help="accuracy only")
    parser.add_argument("--otava", type=int, metavar="SERIES", help="also compare with Apache Otava on SERIES series")
    args = parser.parse_args()
    if not args.quick:
        speed(args.series, args.points)
    if args.otava:
        beside_otava(args.otava, args.points)
    print()
    print("false change points per 100 points (cv 0.5%: A/A, spikes, drift, both) | 2% step found 5 runs after "
          "(cv 0.5%: clean, spikes) | the same at cv 1%")
    print("| settings | A/A | spikes | drift | both | 2% step | 2% step w/ spikes | A/A | spikes | drift | both | "
          "2% step | 2% step w/ spikes |")
    print("|---|" + "---:|" * 12)
    accuracy(DetectionSettings(), "default (winsorized 3 SD)", args.repeats)
    accuracy(DetectionSettings(winsorize=None), "raw values (--values)", args.repeats)


if __name__ == "__main__":
    main()
