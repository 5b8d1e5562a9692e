"""`kbench import` of a large hyperfine file: wall time and peak memory, this tree beside another.

Usage: .venv/bin/python benchmarks/import_speed.py [--entries N] [--repeat R] [--baseline-src DIR]

Writes a hyperfine --export-json file of N commands (10 executions each), then times
`kbench import FILE` into a fresh SQLite database R times, each in a fresh interpreter,
and prints the median wall time, the median peak RSS of the command and, for this tree,
a second import of the same file (every run already stored). With --baseline-src (the
`src` directory of another checkout, e.g. `git archive main src | tar -x -C /tmp/main`),
that tree is timed the same way in the same run, alternating with this one, and the
ratio is printed. It also imports a 300 KB gzip file that inflates to 300 MiB (refused)
and prints the peak RSS of that.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

THIS_SRC = Path(__file__).resolve().parent.parent / "src"

RUNNER = """
import resource, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
elapsed = time.perf_counter() - start
print(elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, proc.returncode)
"""
"""Runs a command and prints its wall time, peak RSS (KiB) and exit status (a refused file is exit 2;
any status is reported, not raised: the baseline may fail where this tree refuses)."""

KBENCH_FROM = """
import sys
sys.meta_path = [f for f in sys.meta_path if "editable" not in repr(f).lower() and "skbc" not in repr(f)]
sys.path.insert(0, sys.argv.pop(1))
import kbench
assert kbench.__file__.startswith(sys.path[0]), kbench.__file__
from kbench.cli.main import main
sys.argv[0] = "kbench"
main()
"""
"""Runs the kbench command of the source tree given as its first argument."""


def write_hyperfine(path: Path, entries: int) -> None:
    rng = random.Random(1)
    results = [{"command": f"sleep 0.{i:05d}", "mean": 0.1, "stddev": 0.01, "median": 0.1, "user": 0.001,
                "system": 0.002, "min": 0.09, "max": 0.11, "times": [rng.uniform(0.09, 0.11) for _ in range(10)],
                "exit_codes": [0] * 10} for i in range(entries)]
    path.write_text(json.dumps({"results": results}))


def write_bomb(path: Path, inflated_mib: int = 300) -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        f.write(compressor.compress(b'{"results": [{"command": "'))
        for _ in range(inflated_mib):
            f.write(compressor.compress(b"a" * (1 << 20)))
        f.write(compressor.compress(b'", "times": [1]}]}') + compressor.flush())


def timed_import(src: Path, file: Path, db: Path) -> tuple[float, float, int]:
    """(seconds, peak RSS in MiB, exit status) of `kbench import FILE` with ``src``'s kbench."""
    argv = [sys.executable, "-c", KBENCH_FROM, str(src), "import", str(file)]
    env = {"KBENCH_DB": str(db), "PATH": "/usr/bin:/bin", "HOME": str(db.parent)}
    out = subprocess.run([sys.executable, "-c", RUNNER, *argv], capture_output=True, text=True, env=env, check=True)
    seconds, peak_kib, status = out.stdout.split()
    return float(seconds), int(peak_kib) / 1024, int(status)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--baseline-src", type=Path, help="the src directory of another kbench checkout")
    args = parser.parse_args()
    trees = {"this tree": THIS_SRC, **({"baseline": args.baseline_src.resolve()} if args.baseline_src else {})}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        file = root / "results.json"
        write_hyperfine(file, args.entries)
        times: dict[str, list[float]] = {name: [] for name in trees}
        peaks: dict[str, list[float]] = {name: [] for name in trees}
        again: list[float] = []
        for repeat in range(args.repeat):
            for name, src in trees.items():
                db = root / f"{name.replace(' ', '-')}-{repeat}.db"
                seconds, peak, status = timed_import(src, file, db)
                assert status == 0, (name, status)
                times[name].append(seconds)
                peaks[name].append(peak)
                if name == "this tree":
                    again.append(timed_import(src, file, db)[0])
        bomb = root / "bomb.json.gz"
        write_bomb(bomb)
        bombs = {name: timed_import(src, bomb, root / f"bomb-{name.replace(' ', '-')}.db")
                 for name, src in trees.items()}
    print(f"hyperfine file: {args.entries:,} commands × 10 executions, {file_size(args.entries)}; "
          f"median of {args.repeat} imports into a new SQLite file")
    for name in trees:
        each = ", ".join(f"{t:.1f}" for t in times[name])
        print(f"  {name:10s} {statistics.median(times[name]):8.1f} s   "
              f"peak RSS {statistics.median(peaks[name]):6.0f} MiB   ({each} s)")
    print(f"  this tree, the same file again (all {args.entries:,} runs already stored): "
          f"{statistics.median(again):.1f} s")
    if "baseline" in trees:
        ratio = statistics.median(times["baseline"]) / statistics.median(times["this tree"])
        print(f"  baseline / this tree: {ratio:.1f}×")
    for name, (seconds, peak, status) in bombs.items():
        print(f"gzip bomb ({bomb_size()} inflating to 300 MiB), {name}: exit {status}, {seconds:.1f} s, "
              f"peak RSS {peak:.0f} MiB")


def file_size(entries: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.json"
        write_hyperfine(path, entries)
        return f"{path.stat().st_size / (1 << 20):.1f} MiB"


def bomb_size() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "b.gz"
        write_bomb(path)
        return f"{path.stat().st_size / 1000:.0f} KB"


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"(benchmark took {time.perf_counter() - start:.0f} s)")
