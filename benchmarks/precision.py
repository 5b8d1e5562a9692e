#!/usr/bin/env python3
"""Run-to-run precision of kbench-probe.

10 fresh processes each measure getppid (count mode); the spread of their
medians (coefficient of variation) is the precision a user can expect between
runs on this machine.  For comparison, `perf bench syscall basic` (10^7 getppid
calls, mean) is run the same number of times if perf exists.

Usage: .venv/bin/python benchmarks/precision.py [--runs 10] [--samples 20000] [--cpu C]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys

import numpy as np

from kbench.native import find_native


def parse(data: bytes):
    nl = data.index(b"\n")
    h = json.loads(data[:nl])
    return h, np.frombuffer(data[nl + 1:], dtype="<u8").reshape(-1, len(h["columns"]))


def cv(xs):
    return statistics.stdev(xs) / statistics.mean(xs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--samples", type=int, default=20000)
    ap.add_argument("--cpu", type=int, default=None, help="pin the probe (default: not pinned)")
    a = ap.parse_args()
    probe = str(find_native("kbench-probe"))
    extra = ["--cpu", str(a.cpu)] if a.cpu is not None else []

    print(f"kbench-probe run getppid --samples {a.samples} {' '.join(extra)}")
    print(f"{'run':>3} {'batch':>5} {'median ns/op':>12} {'p10':>8} {'p90':>8} {'ovh ticks':>9}")
    medians = []
    for i in range(a.runs):
        p = subprocess.run([probe, "run", "getppid", "--samples", str(a.samples), *extra],
                           capture_output=True)
        if p.returncode != 0:
            print(p.stderr.decode().strip(), file=sys.stderr)
            return 1
        h, rows = parse(p.stdout)
        ns = rows[:, 0] / h["timer"]["hz"] * 1e9 / h["batch"]
        med = float(np.median(ns))
        medians.append(med)
        print(f"{i + 1:>3} {h['batch']:>5} {med:>12.2f} {np.percentile(ns, 10):>8.2f} "
              f"{np.percentile(ns, 90):>8.2f} {h['overhead']['median_ticks']:>9}")
    print(f"probe: mean of medians {statistics.mean(medians):.2f} ns, "
          f"min {min(medians):.2f}, max {max(medians):.2f}, CV {cv(medians) * 100:.2f}%")

    perf = shutil.which("perf")
    if not perf:
        print("\nperf: not installed, no `perf bench syscall basic` comparison")
        return 0
    vals = []
    for _ in range(a.runs):
        p = subprocess.run([perf, "bench", "syscall", "basic"], capture_output=True, text=True)
        m = re.search(r"([0-9.]+)\s+usecs/op", p.stdout)
        if p.returncode != 0 or not m:
            print(f"\nperf bench syscall basic failed: {(p.stderr or p.stdout).strip()[:200]}")
            return 0
        vals.append(float(m.group(1)) * 1000)
    print(f"\nperf bench syscall basic (10^7 getppid, mean per call), {a.runs} runs:")
    print("  " + " ".join(f"{v:.1f}" for v in vals) + " ns")
    print(f"perf: mean {statistics.mean(vals):.2f} ns, min {min(vals):.2f}, max {max(vals):.2f}, "
          f"CV {cv(vals) * 100:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
