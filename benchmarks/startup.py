#!/usr/bin/env python3
"""Start-up time of kbench's quick commands, measured with hyperfine beside `python -c pass`.

    .venv/bin/python benchmarks/startup.py                       # 10 runs each, after 2 warm-ups
    .venv/bin/python benchmarks/startup.py --before OTHER/kbench  # another kbench, side by side

The commands read a private SQLite database holding one run (made first), and
examples/scaling.yaml for the job commands. Goal: each <= 0.3 s on the development VM.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "examples" / "scaling.yaml"
GOAL_S = 0.3


def commands(kbench: str, run_id: int) -> list[tuple[str, list[str]]]:
    return [
        ("--help", [kbench, "--help"]),
        ("list", [kbench, "list"]),
        ("results", [kbench, "results"]),
        ("show", [kbench, "show", str(run_id)]),
        ("job expand", [kbench, "job", "expand", str(JOB)]),
        ("job validate", [kbench, "job", "validate", str(JOB)]),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--before", metavar="KBENCH", help="another kbench executable to time beside this one")
    parser.add_argument("--json", action="store_true", help="print the medians as JSON")
    args = parser.parse_args()
    if shutil.which("hyperfine") is None:
        print("hyperfine is not installed (apt-get install hyperfine)", file=sys.stderr)
        return 1
    kbench = str(Path(sys.executable).parent / "kbench")
    with tempfile.TemporaryDirectory(prefix="kbench-startup-") as tmp:
        env = dict(os.environ, KBENCH_DB=str(Path(tmp) / "results.db"), COLUMNS="120")
        made = subprocess.run([kbench, "run", "syscall.getppid", "--samples", "2000", "--json"],
                              capture_output=True, text=True, env=env, check=True)
        run_id = int(json.loads(made.stdout)["run_id"])
        timed = [("python -c pass", [sys.executable, "-c", "pass"])]
        timed += [(f"kbench {name}", argv) for name, argv in commands(kbench, run_id)]
        if args.before:
            timed += [(f"before {name}", argv) for name, argv in commands(args.before, run_id)]
        report = Path(tmp) / "hyperfine.json"
        subprocess.run(
            ["hyperfine", "-N", "--style", "none", "--warmup", str(args.warmup), "--runs", str(args.runs),
             "--export-json", str(report), *(" ".join(argv) for _, argv in timed)],
            env=env, check=True, stdout=subprocess.DEVNULL,
        )
        results = json.loads(report.read_text())["results"]
    medians = {name: result["median"] for (name, _), result in zip(timed, results, strict=True)}
    if args.json:
        print(json.dumps(medians, indent=2))
        return 0
    baseline = medians["python -c pass"]
    print(f"{'command':<28} {'median':>9} {'x python -c pass':>17}  goal <= {GOAL_S} s")
    for name, median in medians.items():
        verdict = "" if name.startswith(("python", "before")) else ("ok" if median <= GOAL_S else "MISSED")
        print(f"{name:<28} {median:>8.3f}s {median / baseline:>16.1f}x  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
