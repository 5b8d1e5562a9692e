#!/usr/bin/env python3
"""kbench-probe's own timing overhead.

Compares the probe's empty timed region (`lfence;rdtsc;lfence` ... `rdtscp;lfence`,
exactly the reads that bracket every sample) with the cheapest correct fenced
pair, back-to-back `lfence;rdtsc;lfence` reads, measured in the same process by
the diagnostic `kbench-probe --selftest-overhead PAIRS` (interleaved in rounds).
Goal: median ratio <= 1.1.  Also shows the overhead recorded in a normal run's
header and the cost of one sample of the `noop` workload with batch 1.

Usage: .venv/bin/python benchmarks/overhead.py [--runs 5] [--pairs 1000000]
(KBENCH_PROBE=/path/to/kbench-probe selects a dev build.)
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

import numpy as np

from kbench.native import find_native


def parse(data: bytes):
    nl = data.index(b"\n")
    h = json.loads(data[:nl])
    return h, np.frombuffer(data[nl + 1:], dtype="<u8").reshape(-1, len(h["columns"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pairs", type=int, default=1_000_000)
    a = ap.parse_args()
    probe = str(find_native("kbench-probe"))

    print(f"probe: {probe}")
    print(f"{'run':>3} {'probe min':>10} {'probe med':>10} {'raw min':>8} {'raw med':>8} {'ratio':>6}")
    ratios, hz = [], None
    for i in range(a.runs):
        p = subprocess.run([probe, "--selftest-overhead", str(a.pairs)], capture_output=True, text=True)
        if p.returncode != 0:
            print(p.stderr.strip(), file=sys.stderr)
            return 1
        r = json.loads(p.stdout)
        ratios.append(r["ratio_median"])
        print(f"{i + 1:>3} {r['probe_min_ticks']:>10} {r['probe_median_ticks']:>10} "
              f"{r['raw_min_ticks']:>8} {r['raw_median_ticks']:>8} {r['ratio_median']:>6.3f}")
    med_ratio = statistics.median(ratios)
    print(f"median ratio probe/raw: {med_ratio:.3f}  (goal <= 1.1: {'ok' if med_ratio <= 1.1 else 'MISSED'})")

    p = subprocess.run([probe, "run", "noop", "--samples", "100000", "--batch", "1"], capture_output=True)
    h, rows = parse(p.stdout)
    ovh = h["overhead"]
    f = 1e9 / h["timer"]["hz"]
    print(f"\nheader overhead ({ovh['pairs']} pairs): min {ovh['min_ticks']} ticks "
          f"({ovh['min_ticks'] * f:.1f} ns), median {ovh['median_ticks']} ticks "
          f"({ovh['median_ticks'] * f:.1f} ns); timer {h['timer']['name']} "
          f"{h['timer']['hz'] / 1e6:.3f} MHz, resolution {h['timer']['resolution_ticks']} ticks")
    med = float(np.median(rows[:, 0]))
    print(f"noop sample (batch 1, includes the indirect call of the run function): "
          f"median {med:.0f} ticks ({med * f:.1f} ns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
