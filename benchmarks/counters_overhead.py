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
  under `perf record -g` by hand;
- in-kernel (--kernel SPEC, default the Debian 6.1 kernel the tests boot; --no-guest skips it):
  kbench.ko's per-call median of kfunc.fib4_lookup and kfunc.spin loops=100 (short calls) in a
  qemu guest, with and without its counters (perf_event_create_kernel_counter on the measuring
  kthread, enabled around the recorded loop), and the wall time of each run as the host sees it
  (the events' creation, release and the read of counter_values are outside the timed loop).

Goals (issue 24): --counters costs at most 1% on the 100 ms command and 2% on getppid, or
it stays off by default. Writes one JSON object to --json FILE if asked.

Usage: .venv/bin/python benchmarks/counters_overhead.py [--rounds 10] [--json out.json]
       [--kernel deb:6.1.0-56-amd64 | --no-guest] [--only kfunc]
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
from kbench.targets.kmod_sysfs import KbenchModule

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
        quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
        out[name] = {"median": statistics.median(values), "ratio_of_medians": statistics.median(values)
                     / statistics.median(found[base]), "median_round_ratio": statistics.median(ratios),
                     "round_ratio_q1": quartiles[0], "round_ratio_q3": quartiles[2], "rounds": len(values)}
    return out


def print_table(title: str, unit: str, table: dict[str, dict[str, float]]) -> None:
    print(f"\n{title}")
    print(f"  {'side':<34} {'median':>14} {'ratio of medians':>17} {'median ratio/round':>19} {'IQR':>15}")
    for name, row in table.items():
        print(f"  {name:<34} {row['median']:>11.4g} {unit:<2} {row['ratio_of_medians']:>17.4f} "
              f"{row['median_round_ratio']:>19.4f} {row['round_ratio_q1']:>7.4f}…{row['round_ratio_q3']:.4f}")


KFUNC_CASES = (("kfunc.fib4_lookup", {}), ("kfunc.spin", {"loops": "100"}))
KFUNC_SAMPLES = 20000
KFUNC_BATCH = 16


def kfunc_rows(rounds: int, kernel: str) -> dict[str, object]:
    """kbench.ko's counters on short calls in a guest: per-call median and run wall time, off/on."""
    from kbench.targets.vm_target import VmTarget

    found: dict[str, object] = {"kernel": kernel}
    with VmTarget(kernel) as target:
        target.start()
        module = target.module
        if module is None:
            raise SystemExit(f"kbench.ko did not load in {kernel}: {target.module_error}")
        found["accel"] = target.info().accel
        for name, params in KFUNC_CASES:
            label = f"{name}{' ' + ' '.join(f'{k}={v}' for k, v in params.items()) if params else ''}"
            found[label] = kfunc_case(module, name, params, label, rounds)
        found["profile_pass"] = kfunc_profile_pass(target)
    return found


def kfunc_profile_pass(target: object) -> dict[str, object]:
    """One --profile pass of kfunc.fib4_lookup in the guest (the guest's perf: booted again with it)."""
    from kbench.catalog.benchmarks import lookup
    from kbench.contract.request import RunRequest
    from kbench.kinds.registry import profile

    bench = lookup("kfunc.fib4_lookup")
    started = time.monotonic()
    found = profile(target, bench, RunRequest(bench.name, batch=KFUNC_BATCH), 2.0)  # type: ignore[arg-type]
    took = time.monotonic() - started
    top = found.top(1)[0]
    print(f"\nkfunc.fib4_lookup --profile pass in the guest (2 s of recorded loop): {took:.1f} s, "
          f"{found.samples} samples of {found.event} kept, top self frame {top[0]} {100 * top[1]:.1f}%")
    return {"seconds": took, "samples": found.samples, "event": found.event, "top": top[0], "top_self": top[1]}


def kfunc_case(module: KbenchModule, name: str, params: dict[str, str], label: str, rounds: int) -> dict[str, object]:
    from kbench.catalog.benchmarks import lookup
    from kbench.contract.request import RunRequest

    bench = lookup(name)
    walls: dict[str, list[float]] = {"off": [], "on": []}

    def per_call(counters: bool) -> float:
        request = RunRequest(name, params=params, samples=KFUNC_SAMPLES, batch=KFUNC_BATCH, counters=counters)
        started = time.monotonic()
        measurement = module.run(bench, request)
        walls["on" if counters else "off"].append(time.monotonic() - started)
        if counters and "counters" not in measurement.header:
            raise SystemExit(f"{name}: kbench.ko did not count: {measurement.header.get('warnings')}")
        return float(np.median(measurement.columns["ticks"])) / KFUNC_BATCH

    table = summary(alternate(rounds, {label: lambda: per_call(False),
                                       f"{label} --counters": lambda: per_call(True)}), label)
    print_table(f"{label} in the guest, per-call median ({KFUNC_SAMPLES:,} samples of batch {KFUNC_BATCH} a round)",
                "cy", table)
    ratios = [on / off for on, off in zip(walls["on"], walls["off"], strict=True)]
    print(f"  run wall time (host): off {statistics.median(walls['off']):.3f} s, on "
          f"{statistics.median(walls['on']):.3f} s, median ratio/round {statistics.median(ratios):.3f}")
    return {"per_call_cycles": table, "run_wall_s": {
        "off": statistics.median(walls["off"]), "on": statistics.median(walls["on"]),
        "median_round_ratio": statistics.median(ratios)}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--kernel", default="deb:6.1.0-56-amd64", help="the guest kernel of the in-kernel rows")
    ap.add_argument("--no-guest", action="store_true", help="skip the in-kernel rows (no qemu boot)")
    ap.add_argument("--only", choices=["kfunc"], help="only the in-kernel rows")
    a = ap.parse_args()
    if a.only == "kfunc":
        results = {"machine_load_at_start": Path("/proc/loadavg").read_text().split()[:3],
                   "kfunc": kfunc_rows(a.rounds, a.kernel),
                   "machine_load_at_end": Path("/proc/loadavg").read_text().split()[:3]}
        print(f"\nload average at start {results['machine_load_at_start']}, at end {results['machine_load_at_end']}")
        if a.json:
            a.json.write_text(json.dumps(results, indent=2) + "\n")
        return 0
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
    if not a.no_guest:
        results["kfunc"] = kfunc_rows(a.rounds, a.kernel)
    results["machine_load_at_end"] = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average at start {results['machine_load_at_start']}, at end {results['machine_load_at_end']}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
