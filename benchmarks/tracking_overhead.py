#!/usr/bin/env python3
"""What ``--track entries`` and ``--track utilisation`` cost: getppid and hackbench, tracked and not.

Usage:
    .venv/bin/python benchmarks/tracking_overhead.py [--rounds 7] [--samples 20000]
        [--hackbench-loops 50] [--kernel deb:6.1.0-56-amd64] [--json]

On this kernel (tracefs), side by side in each round, in an order that rotates from round
to round so that a drifting machine favours no configuration:

- ``syscall.getppid`` pinned to the last CPU: untracked; ``--track entries``;
  ``--track utilisation``; both; and untracked under ``perf record -e raw_syscalls:*
  -C CPU`` (the same tracepoints into perf's buffer and a file) and ``perf trace -s -C
  CPU`` (perf's syscall tracer, summary only), each checked to have seen the calls;
- ``hackbench.pipe-process`` (the real tool, 10 groups, ``--hackbench-loops``): the same,
  tracking every CPU (``-a`` for perf).

With ``--kernel`` (qemu), ``syscall.getppid`` in the guest: untracked and the three
tracked configurations through kbench.ko.

A configuration's figure is the median over rounds of its median per-call time (getppid)
or of hackbench's seconds; its slowdown is the median over rounds of (tracked /
untracked - 1) within the round. The load average before and after is printed: on a
shared machine it is part of the result.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kbench.catalog.benchmarks import lookup
from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.engine.series import metric_series
from kbench.kinds.registry import measure
from kbench.targets.local import LocalTarget
from kbench.trace.tracking import TrackedTarget

TRACKED = {"untracked": (), "entries": ("entries",), "utilisation": ("utilisation",),
           "entries+utilisation": ("entries", "utilisation")}
PERF_READY_S = 2.0
"""perf trace has no "ready" signal: its set-up (open every syscall event) is done by then."""


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def figure(benchmark: Benchmark, measurement: Any) -> float:
    series = metric_series(measurement, benchmark.metric, benchmark.unit, benchmark.direction)
    return float(np.median(series[0].values))


class PerfTrace:
    """``perf trace -s`` on some CPUs in the background; its summary says what it saw."""

    def __init__(self, cpus: str | None):
        self.args = ["perf", "trace", "-s", "--no-inherit"] + (["-C", cpus] if cpus else ["-a"])
        self.proc: subprocess.Popen[bytes] | None = None
        self.summary = ""

    def __enter__(self) -> PerfTrace:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     start_new_session=True)
        time.sleep(PERF_READY_S)
        if self.proc.poll() is not None:
            raise RuntimeError(f"perf trace exited: {self.proc.stderr.read().decode() if self.proc.stderr else ''}")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGINT)
        _, err = self.proc.communicate(timeout=120)
        self.summary = err.decode(errors="replace")

    def calls(self, syscall: str) -> int:
        """Calls of ``syscall`` in perf's summary (all threads together)."""
        total = 0
        for line in self.summary.splitlines():
            fields = line.split()
            if len(fields) > 2 and fields[0] == syscall and fields[1].isdigit():
                total += int(fields[1])
        return total


class PerfRecord(PerfTrace):
    """``perf record`` of the raw_syscalls tracepoints (what tracefs records for --track
    entries' syscalls) into a file; its closing line counts the samples it wrote."""

    def __init__(self, cpus: str | None, output: str):
        super().__init__(cpus)
        self.args = ["perf", "record", "-e", "raw_syscalls:sys_enter", "-e", "raw_syscalls:sys_exit",
                     "-o", output] + (["-C", cpus] if cpus else ["-a"])

    def __exit__(self, *exc: object) -> None:
        super().__exit__(*exc)
        os.unlink(self.args[self.args.index("-o") + 1])

    def calls(self, syscall: str) -> int:
        """Samples written (an enter and an exit per call): perf record names no syscall."""
        words = self.summary.replace("(", " ").replace(")", " ").split()
        return int(words[words.index("samples") - 1]) // 2 if "samples" in words else 0


def local_configs(benchmark: Benchmark, request: RunRequest, perf_cpus: str | None,
                  perf_syscall: str, perf_min_calls: int) -> dict[str, Callable[[], float]]:
    local = LocalTarget()

    def tracked(what: tuple[str, ...]) -> Callable[[], float]:
        target = TrackedTarget(local, what) if what else local
        return lambda: figure(benchmark, measure(target, benchmark, request))

    def under(make: Callable[[], PerfTrace]) -> Callable[[], float]:
        def run() -> float:
            with make() as perf:
                value = figure(benchmark, measure(local, benchmark, request))
            seen = perf.calls(perf_syscall)
            if seen < perf_min_calls:
                raise RuntimeError(f"{perf.args[:2]} saw {seen} {perf_syscall} calls, expected {perf_min_calls}\n"
                                   f"{perf.summary}")
            return value
        return run

    configs = {name: tracked(what) for name, what in TRACKED.items()}
    output = os.path.join(tempfile.gettempdir(), f"kbench-perf-{os.getpid()}.data")
    configs["perf record"] = under(lambda: PerfRecord(perf_cpus, output))
    configs["perf trace"] = under(lambda: PerfTrace(perf_cpus))
    return configs


def guest_configs(kernel: str, request: RunRequest) -> tuple[Any, dict[str, Callable[[], float]]]:
    from kbench.targets.vm_target import VmTarget

    target = VmTarget(kernel)
    target.start()
    benchmark = lookup("syscall.getppid")

    def tracked(what: tuple[str, ...]) -> Callable[[], float]:
        wrapped = TrackedTarget(target, what) if what else target
        return lambda: figure(benchmark, measure(wrapped, benchmark, request))

    return target, {name: tracked(what) for name, what in TRACKED.items()}


def interleave(configs: dict[str, Callable[[], float]], rounds: int, label: str) -> dict[str, Any]:
    names = list(configs)
    values: dict[str, list[float]] = {name: [] for name in names}
    for number in range(rounds):
        order = names[number % len(names):] + names[:number % len(names)]
        for name in order:
            values[name].append(configs[name]())
        print(f"  {label} round {number + 1}: " + ", ".join(f"{n} {values[n][-1]:.4g}" for n in names),
              flush=True)
    base = np.array(values["untracked"])
    rows = {}
    for name in names:
        mine = np.array(values[name])
        rows[name] = {"median": float(np.median(mine)),
                      "slowdown_pct": float(np.median(100 * (mine / base - 1))) if name != "untracked" else 0.0,
                      "values": values[name]}
    return rows


def print_table(title: str, unit: str, rows: dict[str, Any]) -> None:
    print(f"\n{title}")
    print(f"  {'configuration':<22} {'median':>12}  slowdown (median over rounds, within a round)")
    for name, row in rows.items():
        print(f"  {name:<22} {row['median']:>10.4g} {unit}  {row['slowdown_pct']:+.1f}%")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--hackbench-loops", type=int, default=50)
    parser.add_argument("--kernel", help="also getppid in this guest (deb:<release>)")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    cpu = max(os.sched_getaffinity(0))
    result: dict[str, Any] = {"load_before": loadavg(), "rounds": args.rounds}
    print(f"load average before: {result['load_before']} on {os.cpu_count()} CPUs")
    if not args.skip_local:
        getppid = lookup("syscall.getppid")
        request = RunRequest(getppid.name, samples=args.samples, cpu=cpu)
        result["getppid"] = interleave(
            local_configs(getppid, request, str(cpu), "getppid", args.samples), args.rounds, "getppid")
        hackbench = lookup("hackbench.pipe-process")
        hb_request = RunRequest(hackbench.name, params={"loops": str(args.hackbench_loops)})
        result["hackbench"] = interleave(
            local_configs(hackbench, hb_request, None, "write", 1000), args.rounds, "hackbench")
    if args.kernel:
        target, configs = guest_configs(args.kernel, RunRequest("syscall.getppid", samples=args.samples, cpu=1))
        try:
            result["guest_getppid"] = interleave(configs, args.rounds, "guest getppid")
            result["guest_accel"] = target.session.accel if target.session else "?"
        finally:
            target.close()
    result["load_after"] = loadavg()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        if "getppid" in result:
            print_table(f"syscall.getppid on this kernel ({os.uname().release}), CPU {cpu}, "
                        f"{args.samples} samples, tracefs", "ns", result["getppid"])
            print_table(f"hackbench.pipe-process (10 groups, {args.hackbench_loops} loops), every CPU tracked",
                        "s", result["hackbench"])
        if "guest_getppid" in result:
            print_table(f"syscall.getppid in {args.kernel} ({result['guest_accel']}), CPU 1, kbench.ko", "ns",
                        result["guest_getppid"])
        print(f"\nload average after: {result['load_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
