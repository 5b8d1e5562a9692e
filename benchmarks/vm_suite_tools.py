#!/usr/bin/env python3
"""What carrying the suite tools into the guest costs, and hackbench in the guest vs the host.

1. Boot + set-up time added by the tools archive: for each tool set, boot the guest
   (no kbench.ko), run the tool once (``--version``-like: the dynamic loader maps every
   library), power off. The archive is built before timing (its cold build is reported
   apart, in an empty cache directory). Median of ``--runs`` boots per set, in rotation.
2. hackbench in the guest vs on the host: the same ``run_suite`` (same argv) through the
   guest agent and as a local child; median of ``--iterations`` each, at two sizes.

    .venv/bin/python benchmarks/vm_suite_tools.py                # TCG, 3 boots per set
    .venv/bin/python benchmarks/vm_suite_tools.py --runs 5 --json
    .venv/bin/python benchmarks/vm_suite_tools.py --sets none,perf --runs 5 --no-hackbench
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kbench.kinds.suite.run import GuestTools
from kbench.suites import run_suite
from kbench.targets.vm import VmSession, build_initramfs, build_tools_cpio, default_cache_dir, resolve_kernel

TOOL_SETS: dict[str, tuple[str, ...]] = {
    "none": (),
    "hackbench": ("hackbench",),
    "fio": ("fio",),
    "all five suites": ("hackbench", "stress-ng", "fio", "sysbench", "netperf", "netserver"),
    "perf": ("perf",),
}
FIRST_RUN = {"hackbench": ["hackbench", "--help"], "fio": ["fio", "--version"], "none": ["true"],
             "perf": ["perf", "--version"]}
HACKBENCHES = {"4 groups x 10 fds (80 tasks)": {"groups": 4, "fds": 10, "loops": 100},
               "kbench's default, 10 x 20 (400 tasks)": {"groups": 10, "fds": 20, "loops": 100}}


def one_boot(kernel, base: Path, extra: list[Path], first: list[str], cache_dir: Path) -> dict[str, float]:
    t0 = time.monotonic()
    session = VmSession(kernel, initramfs=base, initramfs_extra=extra, cache_dir=cache_dir)
    t_boot = time.monotonic()
    try:
        done = session.exec(first, timeout=120)
        if done.rc not in (0, 1):  # hackbench --help exits 1 after printing its usage
            raise SystemExit(f"{first} failed in the guest ({done.rc}): {done.stderr.decode(errors='replace')}")
        t_first = time.monotonic()
    finally:
        session.close()
    return {"boot": t_boot - t0, "first_run": t_first - t_boot, "boot_and_first_run": t_first - t0}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernel", default="deb:6.1.0-56-amd64")
    parser.add_argument("--runs", type=int, default=3, help="boots per tool set")
    parser.add_argument("--iterations", type=int, default=5, help="hackbench runs on each side")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--sets", help=f"comma-separated tool sets (default all: {', '.join(TOOL_SETS)}); "
                                       "the first is the baseline of 'added'")
    parser.add_argument("--no-hackbench", action="store_true", help="only the boots, not hackbench guest vs host")
    args = parser.parse_args(argv)
    sets = {name: TOOL_SETS[name] for name in args.sets.split(",")} if args.sets else TOOL_SETS
    cache_dir = default_cache_dir()
    kernel = resolve_kernel(args.kernel, cache_dir)
    base = build_initramfs(kernel, {}, cache_dir)

    archives: dict[str, dict[str, object]] = {}
    for name, tools in sets.items():
        if not tools:
            archives[name] = {"path": None, "bytes": 0, "cold_build_s": 0.0}
            continue
        with tempfile.TemporaryDirectory() as cold:
            t0 = time.monotonic()
            build_tools_cpio(tools, Path(cold))
            cold_s = time.monotonic() - t0
        path = build_tools_cpio(tools, cache_dir)
        archives[name] = {"path": path, "bytes": path.stat().st_size, "cold_build_s": cold_s}

    timings: dict[str, list[dict[str, float]]] = {name: [] for name in sets}
    one_boot(kernel, base, [], ["true"], cache_dir)  # warm-up: page cache, PVH image
    for _ in range(args.runs):
        for name, tools in sets.items():
            extra = [archives[name]["path"]] if tools else []
            first = FIRST_RUN.get(name, ["fio", "--version"])
            timings[name].append(one_boot(kernel, base, extra, first, cache_dir))  # type: ignore[list-item]

    rows = []
    for name in sets:
        med = {key: statistics.median(run[key] for run in timings[name]) for key in timings[name][0]}
        rows.append({"tools": name, "archive_mb": archives[name]["bytes"] / 1e6,  # type: ignore[operator]
                     "cold_build_s": archives[name]["cold_build_s"], **med})
    none = rows[0]
    for row in rows:
        row["added_s"] = row["boot_and_first_run"] - none["boot_and_first_run"]

    ratios: list[dict[str, object]] = []
    if not args.no_hackbench:
        ratios = hackbench_ratios(kernel, base, cache_dir, args.iterations)
    return report(rows, ratios, args)


def hackbench_ratios(kernel: object, base: Path, cache_dir: Path, iterations: int) -> list[dict[str, object]]:
    archive = build_tools_cpio(("hackbench",), cache_dir)
    ratios = []
    with VmSession(kernel, initramfs=base, initramfs_extra=[archive], cache_dir=cache_dir) as session:
        for label, params in HACKBENCHES.items():
            host = run_suite("hackbench.pipe-process", params, iterations=iterations, timeout=300)
            guest = run_suite("hackbench.pipe-process", params, iterations=iterations, timeout=900,
                              host=GuestTools(session))
            host_med = statistics.median(host.values("hackbench.pipe-process.time"))
            guest_med = statistics.median(guest.values("hackbench.pipe-process.time"))
            ratios.append({"label": label, "command": guest.command_line,
                           "host_s": host.values("hackbench.pipe-process.time"),
                           "guest_s": guest.values("hackbench.pipe-process.time"), "host_median_s": host_med,
                           "guest_median_s": guest_med, "ratio": guest_med / host_med, "accel": session.accel})
    return ratios


def report(rows: list[dict[str, object]], ratios: list[dict[str, object]], args: argparse.Namespace) -> int:
    if args.json:
        json.dump({"boots": rows, "hackbench": ratios}, sys.stdout, indent=1, default=str)
        print()
        return 0
    print(f"{'tools':<16}{'archive MB':>11}{'cold build':>11}{'boot':>8}{'1st run':>9}{'total':>8}{'added':>8}")
    for row in rows:
        print(f"{row['tools']:<16}{row['archive_mb']:>11.1f}{row['cold_build_s']:>10.2f}s{row['boot']:>7.2f}s"
              f"{row['first_run']:>8.2f}s{row['boot_and_first_run']:>7.2f}s{row['added_s']:>+7.2f}s")
    for ratio in ratios:
        print(f"\nhackbench {ratio['label']}: {ratio['command']}, median of {args.iterations}, {ratio['accel']}:")
        print(f"  host  {ratio['host_median_s']:.3f} s  {ratio['host_s']}")
        print(f"  guest {ratio['guest_median_s']:.3f} s  {ratio['guest_s']}")
        print(f"  guest / host = {ratio['ratio']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
