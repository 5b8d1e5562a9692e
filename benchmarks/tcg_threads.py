#!/usr/bin/env python3
"""What one host thread for all vCPUs costs a TCG guest, against a thread per vCPU.

kbench runs TCG single-threaded on qemu before 8.1 (kbench.targets.vm.accel.tcg_threading,
docs/VM.md). This boots the same 2-vCPU guest both ways, alternately, ``--rounds`` times each,
and times in each boot:

- ``boot``: qemu start to the agent's hello;
- ``one_cpu``: ``kbench-probe run getppid`` (one busy vCPU, the other idle);
- ``two_cpus``: two of those at once (both vCPUs busy);
- ``patching``: insmod kbench.ko, probe and unprobe a function (ftrace text patching, whose
  cross-CPU synchronisation waits for the other vCPU to answer an IPI), rmmod.

    .venv/bin/python benchmarks/tcg_threads.py                 # 3 rounds
    .venv/bin/python benchmarks/tcg_threads.py --rounds 5 --json

Prints the medians (seconds, host wall clock) and single/multi ratios side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from kbench.resources import find_resource
from kbench.targets.vm import VmSession, build_module, default_cache_dir, resolve_kernel
from kbench.targets.vm.accel import TCG_THREAD_ENV

PHASES = ("boot", "one_cpu", "two_cpus", "patching")
MODULE = "/lib/kbench/kbench.ko"
FUNCTIONS = "/sys/kernel/kbench/trace/functions"


def timed(session: VmSession, command: str) -> float:
    t0 = time.monotonic()
    result = session.exec(["sh", "-c", command], timeout=600)
    if not result.ok:
        raise SystemExit(f"{command!r} failed ({result.rc}): {result.stderr.decode(errors='replace')}")
    return time.monotonic() - t0


def one_boot(kernel, files: dict[str, Path], thread: str, samples: int, cache_dir: Path) -> dict[str, float]:
    os.environ[TCG_THREAD_ENV] = thread
    t0 = time.monotonic()
    session = VmSession(kernel, files, accel="tcg", cache_dir=cache_dir)
    try:
        assert session.tcg_thread == thread, (session.tcg_thread, thread)
        boot = time.monotonic() - t0
        probe = f"kbench-probe run getppid --samples {samples} > /dev/null"
        return {
            "boot": boot,
            "one_cpu": timed(session, probe),
            "two_cpus": timed(session, f"{probe} & {probe} & wait"),
            "patching": timed(session, f"insmod {MODULE} && echo +__x64_sys_getppid > {FUNCTIONS} && "
                                       f"echo -__x64_sys_getppid > {FUNCTIONS} && rmmod kbench"),
        }
    finally:
        session.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="deb:6.1.0-56-amd64", help="kernel spec (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=3, help="boots per mode (default %(default)s)")
    ap.add_argument("--samples", type=int, default=20000, help="getppid samples per probe (default %(default)s)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    cache_dir = default_cache_dir()
    kernel = resolve_kernel(args.kernel, cache_dir)
    ko = next(p for p in build_module(find_resource("kmod"), kernel, cache_dir) if p.name == "kbench.ko")
    files = {MODULE: ko}
    results: dict[str, list[dict[str, float]]] = {"single": [], "multi": []}
    for _ in range(args.rounds):
        for thread in ("single", "multi"):
            results[thread].append(one_boot(kernel, files, thread, args.samples, cache_dir))
    median = {t: {p: statistics.median(r[p] for r in runs) for p in PHASES} for t, runs in results.items()}
    if args.json:
        json.dump({"kernel": kernel.release, "rounds": results, "median": median}, sys.stdout, indent=2)
        print()
        return 0
    print(f"kernel {kernel.release}, TCG, 2 vCPUs, {args.rounds} boots per mode, alternated; "
          f"median seconds (host wall clock)")
    print(f"{'':10}{'single':>10}{'multi':>10}{'ratio':>8}")
    for p in PHASES:
        single, multi = median["single"][p], median["multi"][p]
        print(f"{p:10}{single:10.2f}{multi:10.2f}{single / multi:8.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
