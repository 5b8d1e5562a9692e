#!/usr/bin/env python3
"""Agreement of `kbench-probe scale` with upstream will-it-scale (getppid1, 1 task).

Builds upstream will-it-scale OUTSIDE the repository (default /tmp/wis-build) from a
source tree or a git directory you give with --wis-src (a checkout, or the git dir of
a mirror: it is exported with `git archive HEAD`), runs its `getppid1_processes -t 1`
and kbench's `scale getppid1 --tasks 1 --mode process` alternately (A/B, same warm-up
and duration, both pinned to the first core), and prints both medians of the per-run
per-process ops/s and their ratio (goal: within 5%).

Upstream needs hwloc (`apt-get install libhwloc-dev`); when it cannot be built or run
the script says exactly why and exits 2.  No upstream code is kept in kbench.

Usage: .venv/bin/python benchmarks/scale_agreement.py --wis-src DIR [--rounds 5]
       [--duration 5] [--warmup 5] [--test getppid1]
(KBENCH_PROBE=/path/to/kbench-probe selects a dev build.)
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from kbench.kinds.scale.result import parse_scale, scale_probe_args
from kbench.native import find_native


def load_avg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def build_upstream(src: Path, build: Path, test: str) -> tuple[Path | None, str]:
    """Returns (binary, "") or (None, reason)."""
    exe = build / f"{test}_processes"
    if exe.is_file():
        return exe, ""
    if build.exists():
        shutil.rmtree(build)
    build.mkdir(parents=True)
    if (src / "HEAD").is_file() and (src / "objects").is_dir():  # a bare git dir
        arch = subprocess.run(["git", f"--git-dir={src}", "archive", "HEAD"], capture_output=True)
        if arch.returncode:
            return None, f"git archive of {src} failed: {arch.stderr.decode().strip()}"
        tar = subprocess.run(["tar", "-x", "-C", str(build)], input=arch.stdout, capture_output=True)
        if tar.returncode:
            return None, f"tar failed: {tar.stderr.decode().strip()}"
    elif (src / "main.c").is_file():
        shutil.copytree(src, build, dirs_exist_ok=True)
    else:
        return None, f"{src} is neither a will-it-scale checkout (main.c) nor a git directory"
    if not Path("/usr/include/hwloc.h").exists():
        return None, ("hwloc headers are missing (/usr/include/hwloc.h): upstream main.c needs "
                      "hwloc and has no build option without it; apt-get install libhwloc-dev")
    if shutil.which("make") is None or shutil.which("cc") is None:
        return None, "make or cc is not installed"
    mk = subprocess.run(["make", "-C", str(build), exe.name], capture_output=True, text=True)
    if mk.returncode or not exe.is_file():
        return None, f"make {exe.name} failed:\n{mk.stdout[-2000:]}{mk.stderr[-2000:]}"
    return exe, ""


def run_upstream(exe: Path, duration: int, warmup: int) -> tuple[float, list[float]]:
    """Upstream's own `average:` (mean over the measured 1 s samples of the total ops,
    1 task) and those per-second samples (the `total:` lines after `measurement`).

    Its warm-up is fixed at 5 one-second samples (WARMUP_ITERATIONS); the measured
    ones follow (-s)."""
    del warmup  # fixed upstream; kbench is given the same 5 s
    p = subprocess.run(["stdbuf", "-oL", str(exe), "-t", "1", "-s", str(duration)],
                       capture_output=True, text=True, timeout=duration + 60)
    m = re.search(r"^average:(\d+)", p.stdout, re.M)
    if p.returncode or not m:
        raise RuntimeError(f"upstream run failed (exit {p.returncode}): {p.stdout[-500:]}{p.stderr[-500:]}")
    measured = p.stdout.split("measurement", 1)[1]
    per_s = [float(x) for x in re.findall(r"total:(\d+)", measured)]
    return float(m.group(1)), per_s


def run_kbench(probe: str, test: str, duration: int, warmup: int) -> tuple[float, list[float]]:
    args = scale_probe_args(test, 1, "process", duration, warmup, 1.0)
    p = subprocess.run([probe, *args], capture_output=True, timeout=duration + warmup + 60)
    if p.returncode:
        raise RuntimeError(f"kbench-probe failed (exit {p.returncode}): {p.stderr.decode()}")
    r = parse_scale(p.stdout)
    per_s = [float(x) for x in r.steady.per_task_ops_per_s]
    return r.metrics()[f"will-it-scale.{test}.per_process_ops"].value, per_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wis-src", type=Path, required=True,
                    help="will-it-scale checkout or git dir (kept out of the kbench tree)")
    ap.add_argument("--build-dir", type=Path, default=Path("/tmp/wis-build"))
    ap.add_argument("--test", default="getppid1")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5, help="measured seconds per run")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up seconds (upstream: fixed 5)")
    a = ap.parse_args()

    build = a.build_dir.resolve()
    if str(build).startswith(str(Path(__file__).resolve().parents[1])):
        print("refusing to build upstream inside the kbench tree", file=sys.stderr)
        return 2
    exe, why = build_upstream(a.wis_src.resolve(), build, a.test)
    if exe is None:
        print(f"upstream will-it-scale cannot be built here: {why}")
        return 2
    probe = str(find_native("kbench-probe"))
    print(f"upstream: {exe}\nkbench:   {probe}\ntest {a.test}, 1 task, process mode, "
          f"warm-up {a.warmup} s, {a.duration} x 1 s measured, {a.rounds} A/B rounds, "
          f"{os.cpu_count()} CPUs")
    print(f"{'round':>5} {'upstream ops/s':>15} {'kbench ops/s':>15} {'ratio':>7} {'load':>6}")
    ups, ours, ups_s, ours_s = [], [], [], []
    for i in range(a.rounds):
        first_upstream = i % 2 == 0  # alternate the order too
        order = ("u", "k") if first_upstream else ("k", "u")
        res = {}
        for who in order:
            res[who] = (run_upstream(exe, a.duration, a.warmup) if who == "u"
                        else run_kbench(probe, a.test, a.duration, a.warmup))
            time.sleep(0.2)
        ups.append(res["u"][0])
        ours.append(res["k"][0])
        ups_s += res["u"][1]
        ours_s += res["k"][1]
        print(f"{i + 1:>5} {ups[-1]:>15,.0f} {ours[-1]:>15,.0f} {ours[-1] / ups[-1]:>7.3f} {load_avg():>6}")
    mu, mk = statistics.median(ups), statistics.median(ours)
    ratio = mk / mu
    print(f"median upstream {mu:,.0f} ops/s, kbench {mk:,.0f} ops/s, ratio kbench/upstream "
          f"{ratio:.3f} (goal within 5%: {'ok' if abs(ratio - 1) <= 0.05 else 'MISSED'})")
    su, sk = statistics.median(ups_s), statistics.median(ours_s)
    print(f"median of the per-second samples ({len(ups_s)} each): upstream {su:,.0f}, kbench "
          f"{sk:,.0f}, ratio {sk / su:.3f}; best second: upstream {max(ups_s):,.0f}, kbench "
          f"{max(ours_s):,.0f}, ratio {max(ours_s) / max(ups_s):.3f}")
    print(f"per-round ratios: {', '.join(f'{k / u:.3f}' for k, u in zip(ours, ups, strict=True))}; "
          f"load average now {load_avg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
