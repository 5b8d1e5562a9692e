#!/usr/bin/env python3
"""What --counters and --profile cost the numbers they sit beside.

Cases, each measured in alternating rounds (off, on, off, on, ...: the machine's drift and
its speed switches hit both alike), the median of each side and the median of the
per-round ratios on/off:

- getppid: `kbench-probe run getppid` per-operation median, with and without --counters
  (perf_event_open around the measured loop), beside `perf stat -e EVENTS -- kbench-probe`
  by hand and `perf record -g -F 4999 -- kbench-probe` by hand (sampling inside the timed
  region: what kbench's --profile avoids by profiling in a run of its own);
- a 100 ms command: `kbench-probe run command` per-execution CPU time (wait4) and wall
  time, with and without --counters (inherited counters on the child);
- hackbench: its own "Time:" plain, under `perf stat` (what a suite's --counters does) and
  under `perf record -g` by hand.

Goals (issue 24): --counters costs at most 1% on the 100 ms command and 2% on getppid, or
it stays off by default. Writes one JSON object to --json FILE if asked.

Usage: .venv/bin/python benchmarks/counters_overhead.py [--rounds 10] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from kbench.native import find_native
from kbench.profile.counters import EVENTS

LOOP = r"""
#include <stdint.h>
static volatile uint64_t sink;
int main(void)
{
    uint64_t x = 88172645463325252ULL, s = 0;
    for (uint64_t i = 0; i < (uint64_t)ITERS; i++) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; s += x; }
    sink = s;
    return 0;
}
"""


def probe_run(argv: list[str]) -> tuple[dict, np.ndarray]:
    done = subprocess.run(argv, capture_output=True, check=True)
    data = done.stdout
    nl = data.index(b"\n")
    header = json.loads(data[:nl])
    return header, np.frombuffer(data[nl + 1:], dtype="<u8").reshape(-1, len(header["columns"]))


def per_op_median(header: dict, rows: np.ndarray) -> float:
    return float(np.median(rows[:, 0] * 1e9 / header["timer"]["hz"] / header["batch"]))


def alternate(rounds: int, sides: dict[str, Callable[[], float]]) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, measure in sides.items():
            found[name].append(measure())
    return found


def summary(found: dict[str, list[float]], base: str) -> dict[str, dict[str, float]]:
    out = {}
    for name, values in found.items():
        ratios = [v / b for v, b in zip(values, found[base], strict=True)]
        out[name] = {"median": statistics.median(values), "ratio_of_medians": statistics.median(values)
                     / statistics.median(found[base]), "median_round_ratio": statistics.median(ratios),
                     "rounds": len(values)}
    return out


def print_table(title: str, unit: str, table: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"  {'side':<34} {'median':>14} {'ratio of medians':>17} {'median ratio/round':>19}")
    for name, row in table.items():
        print(f"  {name:<34} {row['median']:>11.4g} {unit:<2} {row['ratio_of_medians']:>17.4f} "
              f"{row['median_round_ratio']:>19.4f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()
    probe = str(find_native("kbench-probe"))
    perf = shutil.which("perf")
    if perf is None:
        print("needs perf (linux-perf)", file=sys.stderr)
        return 1
    events = ",".join(EVENTS)
    results: dict[str, object] = {"machine_load_at_start": Path("/proc/loadavg").read_text().split()[:3]}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        getppid = [probe, "run", "getppid", "--samples", "200000", "--batch", "16", "--overhead-pairs", "1000"]
        sides = {
            "getppid": lambda: per_op_median(*probe_run(getppid)),
            "getppid --counters": lambda: per_op_median(*probe_run([*getppid, "--counters"])),
            "perf stat -- getppid (by hand)": lambda: per_op_median(*probe_run(
                [perf, "stat", "-x", ",", "-o", str(work / "s.csv"), "-e", events, "--", *getppid])),
            "perf record -g -- getppid (by hand)": lambda: per_op_median(*probe_run(
                [perf, "record", "-q", "-g", "-F", "4999", "-e", "cpu-clock", "-o", str(work / "r.data"), "--",
                 *getppid])),
        }
        table = summary(alternate(a.rounds, sides), "getppid")
        print_table("getppid, per-operation median (200,000 samples of batch 16 per round)", "ns", table)
        results["getppid"] = table

        (work / "loop.c").write_text(LOOP)
        subprocess.run(["gcc", "-O2", "-DITERS=60000000ull", "-o", str(work / "loop"), str(work / "loop.c")],
                       check=True)
        command = [probe, "run", "command", "-p", f"cmd={work / 'loop'}", "-p", "shell=0", "--samples", "3",
                   "--warmup-samples", "0", "--timer", "clock", "--overhead-pairs", "1000"]

        def cpu(extra: list[str]) -> float:
            header, rows = probe_run([*command, *extra])
            columns = header["columns"]
            return float(np.median(rows[:, columns.index("utime_ns")] + rows[:, columns.index("stime_ns")]))

        def wall(extra: list[str]) -> float:
            return per_op_median(*probe_run([*command, *extra]))

        table = summary(alternate(a.rounds, {"command": lambda: cpu([]),
                                             "command --counters": lambda: cpu(["--counters"])}), "command")
        print_table("100 ms command (an xorshift loop), CPU time per execution from wait4", "ns", table)
        results["command_cpu"] = table
        table = summary(alternate(a.rounds, {"command": lambda: wall([]),
                                             "command --counters": lambda: wall(["--counters"])}), "command")
        print_table("100 ms command, wall time per execution", "ns", table)
        results["command_wall"] = table

        hackbench = shutil.which("hackbench")
        if hackbench is not None:
            bench = [hackbench, "-g", "2", "-f", "10", "-l", "300"]

            def hack(prefix: list[str]) -> float:
                out = subprocess.run([*prefix, *bench], capture_output=True, text=True, check=True).stdout
                return float(re.search(r"Time:\s*([0-9.]+)", out).group(1))  # type: ignore[union-attr]

            table = summary(alternate(a.rounds, {
                "hackbench": lambda: hack([]),
                "hackbench under perf stat (--counters)": lambda: hack(
                    [perf, "stat", "-x", ",", "-o", str(work / "h.csv"), "-e", events, "--"]),
                "hackbench under perf record -g": lambda: hack(
                    [perf, "record", "-q", "-g", "-F", "4999", "-e", "cpu-clock", "-o", str(work / "h.data"), "--"]),
            }), "hackbench")
            print_table("hackbench -g 2 -f 10 -l 300, its own Time:", "s", table)
            results["hackbench"] = table

        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "kbench.cli", "--db", str(work / "k.db"), "run", "syscall.getppid",
                        "--samples", "20000", "--json"], capture_output=True, check=True)
        plain_s = time.monotonic() - started
        started = time.monotonic()
        subprocess.run([sys.executable, "-m", "kbench.cli", "--db", str(work / "k.db"), "run", "syscall.getppid",
                        "--samples", "20000", "--profile", "--json"], capture_output=True, check=True)
        profiled_s = time.monotonic() - started
        print(f"\nkbench run syscall.getppid --samples 20000: {plain_s:.1f} s; with --profile {profiled_s:.1f} s "
              "(the profile is a run of its own: the measured numbers are the same process as without it)")
        results["profile_pass_s"] = {"run": plain_s, "run --profile": profiled_s}
    results["machine_load_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average at start {results['machine_load_at_start']}, at end {results['machine_load_at_end']}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
