#!/usr/bin/env python3
"""Building kernels from source: a first minimal build, incremental rebuilds after a one-file
change, and the same revision again (the cache), with `kbench kernel build` as a user runs it.

The tree is Debian's linux-source-6.1 as a git repository (tests/vm/kernel_tree.py, made once
and kept in kbench's cache). Each round builds in a cache directory of its own, so the first
build is a first build (ccache, when installed, is disabled for it: CCACHE_DISABLE=1); then
``--incremental`` times commits each changing getppid()'s loop count in kernel/sys.c, built
in turn in the same workspace; then ``--again`` times the last revision asked again.

    .venv/bin/python benchmarks/kernel_build.py                    # 1 round, 3 + 3
    .venv/bin/python benchmarks/kernel_build.py --rounds 3 --json

Goals (issue 32, this 2-vCPU VM): first build <= 6 min, an incremental step <= 60 s,
the same revision again <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from tests.vm.kernel_tree import GETPPID, git, linux_repo  # noqa: E402

LOOP = """	for (i = 0; i < {n}; i++) {{
		pid = task_tgid_vnr(rcu_dereference(current->real_parent));
		barrier();
	}}
"""


def kernel_build(repo: Path, rev: str, cache: Path, *, ccache: bool = True) -> tuple[float, dict[str, object]]:
    """Wall time of `kbench kernel build REPO --rev REV --json` and its JSON."""
    env = dict(os.environ, KBENCH_CACHE_DIR=str(cache))
    if not ccache:
        env["CCACHE_DISABLE"] = "1"
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", "kernel", "build", str(repo), "--rev", rev, "--json"],
                          capture_output=True, text=True, env=env)
    took = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"kbench kernel build {rev} failed: {proc.stderr.strip()}")
    return took, json.loads(proc.stdout)


def one_file_change(work: Path, n: int) -> str:
    """A commit on the branch ``bench`` whose only change is getppid's loop count; its id."""
    sys_c = work / "kernel" / "sys.c"
    text = sys_c.read_text()
    start = text.index("SYSCALL_DEFINE0(getppid)")
    end = text.index("SYSCALL_DEFINE0(getuid)")
    body = GETPPID.replace("	int pid;\n", "	int pid, i;\n").replace(
        "	pid = task_tgid_vnr(rcu_dereference(current->real_parent));\n", LOOP.format(n=n))
    sys_c.write_text(text[:start] + body + "\n" + text[end:])
    git(work, "commit", "-q", "-am", f"getppid: {n} lookups")
    return git(work, "rev-parse", "HEAD")


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1, help="first builds, each in a fresh cache (default 1)")
    parser.add_argument("--incremental", type=int, default=3, help="one-file changes built per round")
    parser.add_argument("--again", type=int, default=3, help="builds of the same revision again per round")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    repo = linux_repo()
    first: list[float] = []
    steps: list[float] = []
    make_steps: list[float] = []
    again: list[float] = []
    lookups: list[float] = []
    notes = {"machine": f"{os.cpu_count()} CPUs, {platform.machine()}, {platform.release()}",
             "ccache": shutil.which("ccache") is not None, "load_before": load()}
    for _ in range(args.rounds):
        with tempfile.TemporaryDirectory(prefix="kbench-bench-") as scratch:
            cache = Path(scratch) / "cache"
            work = Path(scratch) / "work"  # a clone of the repository that takes the benchmark's commits
            git(Path(scratch), "clone", "-q", "--shared", str(repo), str(work))
            git(work, "checkout", "-q", "-b", "bench", "main~1")
            took, built = kernel_build(work, "HEAD", cache, ccache=False)
            first.append(took)
            print(f"first build: {took:.1f} s (make {built['durations']['build']:.1f} s)  load {load()}", flush=True)
            for n in range(2, 2 + args.incremental):
                rev = one_file_change(work, n)
                took, built = kernel_build(work, rev, cache)
                steps.append(took)
                make_steps.append(float(built["durations"]["build"]))  # type: ignore[index]
                print(f"one-file change: {took:.1f} s (make {built['durations']['build']:.1f} s)", flush=True)
            for _ in range(args.again):
                took, built = kernel_build(work, "HEAD", cache)
                assert built["from_cache"] is True
                again.append(took)
                lookups.append(float(built["lookup_s"]))  # type: ignore[arg-type]
    notes["load_after"] = load()
    figures = {
        "first_build_s": statistics.median(first), "incremental_s": statistics.median(steps),
        "incremental_make_s": statistics.median(make_steps), "again_s": statistics.median(again),
        "again_lookup_s": statistics.median(lookups), "first_builds": first, "incremental": steps, "again": again,
        **notes,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"\n{notes['machine']}; ccache {'installed' if notes['ccache'] else 'not installed'}; "
          f"load {notes['load_before']} before, {notes['load_after']} after")
    print("| what | median | runs | goal |\n|---|---|---|---|")
    print(f"| first minimal build (`kbench kernel build`, ccache off) | {figures['first_build_s']:.0f} s | "
          f"{len(first)} | <= 360 s |")
    print(f"| one-file change (checkout, config, make, install) | {figures['incremental_s']:.1f} s "
          f"(make {figures['incremental_make_s']:.1f} s) | {len(steps)} | <= 60 s |")
    print(f"| same revision again (the whole command) | {figures['again_s']:.2f} s "
          f"(lookup {figures['again_lookup_s'] * 1000:.0f} ms) | {len(again)} | <= 1 s |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
