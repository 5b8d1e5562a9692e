"""Does `kbench watch` name the right commit, never a wrong one, and how soon?

Usage: python benchmarks/watch_accuracy.py [--steps 1 2 3 5] [--repos-per-step 6] [--aa-repos 20]
           [--aa-commits 25] [--aa-batch 3] [--loops 85000000] [--base 8 16] [--after 2] [--samples 5]
           [--iterations 3] [--no-load] [--seed 0] [--workdir DIR] [--json-out FILE]

Real measurements through the real command (``kbench watch --once --json``), one SQLite
store for the whole run, while one unrelated busy loop keeps a CPU busy (``--no-load``:
none). The program is ``kbench.bisect.demo``'s C loop with ``--loops`` steps (85 M: about
100 ms here), built with ``cc -O1``; the job runs it ``--samples`` times per run,
``--iterations`` runs per commit.

Step repositories (``--repos-per-step`` per step size): a random number of comment-only
commits (``--base``, drawn uniformly), then the culprit (``x %`` more loop steps), then
``--after`` comment commits. The first poll measures the base (``--from`` its first
commit); then each later commit *lands* (the branch ref moves to it) and a poll follows.
A repository counts as *exact* when the only confirmed regression names the culprit,
*wrong* when a confirmed regression names another commit, *missed* when none is confirmed.
Time to mail: from the culprit landing to its mail file being written (the polls in
between, the confirmation, any bisection and the verification; add the polling interval).

A/A repositories (``--aa-repos`` of ``--aa-commits`` comment-only commits): the first
half is measured at the first poll, then ``--aa-batch`` commits land per poll. Every confirmed
regression there is a false one.

Prints one table (and ``--json-out``): per step size the repositories, exact / wrong /
missed with a 95 % Wilson interval of the exact rate, and the median and largest time
to mail; then the A/A line: commits watched, candidates examined and dropped, confirmed
regressions.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from kbench.bisect.demo import BUILD, make_demo_repo

KBENCH = [sys.executable, "-m", "kbench.cli"]


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def land(repo: Path, sha: str) -> None:
    subprocess.run(["git", "-C", str(repo), "update-ref", "refs/heads/main", sha], check=True)


def poll(db: Path, repo: Path, job: Path, out: Path, work: Path, *extra: str) -> dict[str, Any]:
    env = dict(os.environ, KBENCH_DB=str(db))
    proc = subprocess.run([*KBENCH, "watch", str(repo), "--branch", "main", "--build", BUILD, "--job", str(job),
                           "--once", "--json", "--outbox", str(out), "--workdir", str(work), *extra],
                          capture_output=True, text=True, env=env, timeout=7200)
    with (out.parent / "watch.log").open("a") as log:
        log.write(proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"kbench watch failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout))


def step_repository(root: Path, db: Path, job: Path, step_pct: float, base: int, after: int,
                    loops: int) -> dict[str, Any]:
    repo = root / "repo"
    shas = make_demo_repo(repo, commits=base + 1 + after, culprit=base, broken=None, extra=step_pct / 100, loops=loops)
    culprit = shas[base]
    out, work = root / "out", root / "work"
    land(repo, shas[base - 1])
    result = poll(db, repo, job, out, work, "--from", shas[0])
    landed = time.time()
    for sha in shas[base:]:
        land(repo, sha)
        result = poll(db, repo, job, out, work)
    named = [r["culprit"]["sha"] for r in result["regressions"]]
    mails = sorted(out.glob("*.eml")) if out.exists() else []
    first_mail = min((p.stat().st_mtime for p in mails), default=None)
    return {
        "step_pct": step_pct, "base": base, "culprit": culprit, "named": named,
        "exact": named == [culprit], "wrong": any(n != culprit for n in named), "missed": not named,
        "time_to_mail_s": None if first_mail is None else first_mail - landed,
        "dropped": len(result["dropped"]), "suspected": len(result["suspected"]),
    }


def aa_repository(root: Path, db: Path, job: Path, commits: int, loops: int, batch: int) -> dict[str, Any]:
    repo = root / "repo"
    shas = make_demo_repo(repo, commits=commits, culprit=None, broken=None, loops=loops)
    out, work = root / "out", root / "work"
    half = commits // 2
    land(repo, shas[half - 1])
    result = poll(db, repo, job, out, work, "--from", shas[0])
    for start in range(half, commits, batch):
        land(repo, shas[min(start + batch, commits) - 1])
        result = poll(db, repo, job, out, work)
    return {"commits": commits, "confirmed": len(result["regressions"]), "dropped": len(result["dropped"]),
            "suspected": len(result["suspected"])}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=float, nargs="+", default=[1, 2, 3, 5])
    parser.add_argument("--repos-per-step", type=int, default=6)
    parser.add_argument("--aa-repos", type=int, default=20)
    parser.add_argument("--aa-commits", type=int, default=25)
    parser.add_argument("--aa-batch", type=int, default=3, help="A/A commits landing at once (one poll each time)")
    parser.add_argument("--loops", type=int, default=85_000_000)
    parser.add_argument("--base", type=int, nargs=2, default=[8, 16], metavar=("MIN", "MAX"))
    parser.add_argument("--after", type=int, default=2)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--no-load", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    root = args.workdir or Path(tempfile.mkdtemp(prefix="kbench-watch-accuracy-"))
    root.mkdir(parents=True, exist_ok=True)
    db = root / "results.db"
    job = root / "job.yaml"
    job.write_text(f"benchmark: command\nparams:\n  cmd: ./prog\nsamples: {args.samples}\n"
                   f"iterations: {args.iterations}\n")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the load below is stopped on `kill`
    load = None if args.no_load else subprocess.Popen([sys.executable, "-c", "while True: pass"])
    started = time.monotonic()
    steps: list[dict[str, Any]] = []
    aa: list[dict[str, Any]] = []
    try:
        for step in args.steps:
            for k in range(args.repos_per_step):
                base = int(rng.integers(args.base[0], args.base[1] + 1))
                found = step_repository(root / f"step{step:g}-{k}", db, job, step, base, args.after, args.loops)
                steps.append(found)
                print(f"step {step:g}% #{k}: base {base}, named {[n[:12] for n in found['named']]}, "
                      f"exact={found['exact']} time to mail {found['time_to_mail_s']}", file=sys.stderr, flush=True)
        for k in range(args.aa_repos):
            found = aa_repository(root / f"aa-{k}", db, job, args.aa_commits, args.loops, args.aa_batch)
            aa.append(found)
            print(f"A/A #{k}: {found}", file=sys.stderr, flush=True)
    finally:
        if load is not None:
            load.kill()
            load.wait()
    elapsed = time.monotonic() - started
    rows = []
    for step in args.steps:
        mine = [s for s in steps if s["step_pct"] == step]
        exact = sum(s["exact"] for s in mine)
        times = [s["time_to_mail_s"] for s in mine if s["time_to_mail_s"] is not None]
        low, high = wilson(exact, len(mine))
        rows.append({
            "step_pct": step, "repos": len(mine), "exact": exact, "wrong": sum(s["wrong"] for s in mine),
            "missed": sum(s["missed"] for s in mine), "exact_ci": [low, high],
            "median_time_to_mail_s": statistics.median(times) if times else None,
            "max_time_to_mail_s": max(times) if times else None,
        })
    summary = {
        "machine_load": os.getloadavg(), "cpus": os.cpu_count(), "loops": args.loops, "samples": args.samples,
        "iterations": args.iterations, "busy_loop": not args.no_load, "elapsed_s": elapsed, "steps": rows,
        "aa": {"repos": len(aa), "commits": sum(a["commits"] for a in aa),
               "confirmed": sum(a["confirmed"] for a in aa), "dropped": sum(a["dropped"] for a in aa)},
        "runs": {"steps": steps, "aa": aa},
    }
    print(f"{'step':>6} {'repos':>6} {'exact':>6} {'wrong':>6} {'missed':>7} {'exact 95% CI':>16} "
          f"{'median to mail':>15} {'max to mail':>12}")
    for row in rows:
        low, high = row["exact_ci"]
        med, top = row["median_time_to_mail_s"], row["max_time_to_mail_s"]
        print(f"{row['step_pct']:>5g}% {row['repos']:>6} {row['exact']:>6} {row['wrong']:>6} {row['missed']:>7} "
              f"{f'{100 * low:.0f}-{100 * high:.0f}%':>16} {'-' if med is None else f'{med:.0f} s':>15} "
              f"{'-' if top is None else f'{top:.0f} s':>12}")
    a = summary["aa"]
    print(f"A/A: {a['repos']} repositories, {a['commits']} commits, {a['dropped']} candidates dropped, "
          f"{a['confirmed']} confirmed regressions")
    print(f"{elapsed / 60:.0f} min on {os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f}")
    if args.json_out:
        args.json_out.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
