"""Sensitivity on this machine: can a 1% slower build be told apart, and an identical copy not?

Usage: python benchmarks/sensitivity.py [--reps R] [--kbench SxT ...] [--fixed]
                                        [--budget SEC] [--target-ms MS] [--methods LIST]
                                        [--json-out FILE]

Three programs are built in a temporary directory from one C source with gcc -O2:
a CPU-bound xorshift loop whose result goes to a volatile sink, its iteration
count compiled in with -DITERS. A runs N iterations (N calibrated so A takes
about --target-ms), B runs exactly 1.01 N, A' is a byte-identical copy of A in a
separate file (for A/A). A fourth build with ITERS=0 measures the cost of
starting a process, so the expected wall-clock difference is printed too (the
loop is 1% longer, the exec/exit part is not).

Each repetition runs every method twice, on A vs B and on A vs A', in a
shuffled order (so slow drift of the host does not line up with one method):

- ``kbench SxT``: ``kbench compare --command A --command B -p shell=0 --samples S
  --trials T --json`` (adaptive stopping unless --fixed). Detected = verdict
  "regression"; wrong direction = "improvement"; an A/A false positive is either.
- ``time``: one bash loop running ``time A; time B`` alternately n times
  (TIMEFORMAT=%3R, millisecond resolution), n chosen to fill --budget seconds.
  Naive rule: mean(B) - mean(A) > 0 means "B is slower".
- ``taskset+time``: the same loop under ``taskset -c 1`` (bash and children
  pinned to CPU 1).
- ``hyperfine``: ``hyperfine -N --warmup 3 --runs n --export-json f A B``; rule:
  "different" when |mean_B - mean_A| > 2 * sqrt(sd_A^2/n + sd_B^2/n)
  (two standard errors of the difference of means; hyperfine itself prints no
  verdict). Detected = different and B slower.

For the naive rule of time/taskset the A/A "false-positive" rate is the rate of
A' measured slower than A (50% expected by construction); the column "|d-true|<0.5"
gives the fraction of comparisons whose measured difference is within half a
percentage point of the true one (1% for A/B, 0% for A/A) for every method.

Goal of the issue: detected in >= 95% of A/B comparisons, A/A flagged in <= 5%,
each comparison within 30 s of wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SOURCE = r"""
#include <stdint.h>
static volatile uint64_t sink;
int main(void)
{
    uint64_t x = 88172645463325252ULL, s = 0;
    for (uint64_t i = 0; i < (uint64_t)ITERS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s += x;
    }
    sink = s;
    return 0;
}
"""

HERE = Path(__file__).resolve().parent
DEFAULT_KBENCH = Path(sys.executable).with_name("kbench")
if not DEFAULT_KBENCH.exists():
    DEFAULT_KBENCH = HERE.parent / ".venv" / "bin" / "kbench"


# ---------------------------------------------------------------- building

def build(workdir: Path, iters: int, name: str) -> Path:
    src = workdir / "loop.c"
    if not src.exists():
        src.write_text(SOURCE)
    out = workdir / name
    subprocess.run(["gcc", "-O2", f"-DITERS={iters}", "-o", str(out), str(src)], check=True)
    return out


def median_runtime(binary: Path, runs: int = 15) -> float:
    """Median wall seconds of one execution (spawned from Python)."""
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([str(binary)], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def prepare(workdir: Path, target_ms: float) -> dict:
    zero = build(workdir, 0, "zero")
    probe = build(workdir, 2_000_000, "probe")
    t_zero = median_runtime(zero)
    t_probe = median_runtime(probe)
    per_iter = max(t_probe - t_zero, 1e-6) / 2_000_000
    iters = int((target_ms / 1000 - t_zero) / per_iter) // 100 * 100
    iters = max(iters, 100_000)
    a = build(workdir, iters, "A")
    b = build(workdir, iters // 100 * 101, "B")
    a2 = workdir / "A2"
    shutil.copyfile(a, a2)
    os.chmod(a2, 0o755)
    t_a = median_runtime(a)
    t_b = median_runtime(b)
    expected = 0.01 * max(t_a - t_zero, 0.0) / t_a
    return {
        "dir": str(workdir), "A": str(a), "B": str(b), "A2": str(a2),
        "iters_A": iters, "iters_B": iters // 100 * 101,
        "t_zero_ms": 1e3 * t_zero, "t_A_ms": 1e3 * t_a, "t_B_ms": 1e3 * t_b,
        "expected_wall_diff_pct": 100 * expected,
    }


# ---------------------------------------------------------------- methods

def run_kbench(kbench: str, a: str, b: str, samples: int, trials: int, fixed: bool, seed: int) -> dict:
    cmd = [kbench, "compare", "--command", a, "--command", b, "-p", "shell=0",
           "--samples", str(samples), "--trials", str(trials), "--seed", str(seed), "--json"]
    if fixed:
        cmd.append("--fixed")
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"kbench failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    metric = json.loads(out.stdout)["metrics"][0]
    verdict = metric["verdict"]
    return {
        "diff_pct": metric["change_pct"], "verdict": verdict, "p_value": metric.get("p_value"),
        "ci_pct": metric.get("ci_pct"), "trials": metric.get("trials"),
        "slower": verdict == "regression", "faster": verdict == "improvement",
    }


def run_time_loop(a: str, b: str, n: int, pin: bool) -> dict:
    script = (f"TIMEFORMAT=%3R; for ((i=0;i<{n};i++)); do "
              f"{{ time {a} ; }} 2>>\"$1\"; {{ time {b} ; }} 2>>\"$2\"; done")
    with tempfile.TemporaryDirectory() as tmp:
        fa, fb = Path(tmp) / "a", Path(tmp) / "b"
        cmd = ["bash", "-c", script, "loop", str(fa), str(fb)]
        if pin:
            cmd = ["taskset", "-c", "1", *cmd]
        subprocess.run(cmd, check=True)
        ta = [float(x) for x in fa.read_text().split()]
        tb = [float(x) for x in fb.read_text().split()]
    ma, mb = statistics.fmean(ta), statistics.fmean(tb)
    diff = 100 * (mb / ma - 1)
    return {"diff_pct": diff, "n": n, "mean_a": ma, "mean_b": mb,
            "slower": mb - ma > 0, "faster": False}


def run_hyperfine(a: str, b: str, n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "h.json"
        subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(n), "--style", "none",
                        "--export-json", str(f), a, b], check=True, capture_output=True)
        res = json.loads(f.read_text())["results"]
    (ma, sa), (mb, sb) = [(r["mean"], r["stddev"] or 0.0) for r in res]
    se = ((sa ** 2 + sb ** 2) / n) ** 0.5
    different = abs(mb - ma) > 2 * se
    return {"diff_pct": 100 * (mb / ma - 1), "n": n, "mean_a": ma, "sd_a": sa, "mean_b": mb, "sd_b": sb,
            "slower": different and mb > ma, "faster": different and mb < ma}


# ---------------------------------------------------------------- summary

def quantiles(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (float("nan"),) * 3
    if len(values) == 1:
        return values[0], values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[1], q[2]


def summarise(name: str, rows: list[dict], truth: float) -> dict:
    ab = [r for r in rows if r["pair"] == "A/B"]
    aa = [r for r in rows if r["pair"] == "A/A"]

    def rate(items: list[dict], key) -> float:
        return sum(1 for r in items if key(r)) / len(items) if items else float("nan")

    return {
        "method": name,
        "n_ab": len(ab), "n_aa": len(aa),
        "detect": rate(ab, lambda r: r["slower"]),
        "wrong": rate(ab, lambda r: r["faster"]),
        "fp": rate(aa, lambda r: r["slower"] or r["faster"]),
        "close_ab": rate(ab, lambda r: abs(r["diff_pct"] - truth) < 0.5),
        "close_aa": rate(aa, lambda r: abs(r["diff_pct"]) < 0.5),
        "diff_ab": quantiles([r["diff_pct"] for r in ab]),
        "diff_aa": quantiles([r["diff_pct"] for r in aa]),
        "wall_median": statistics.median([r["wall_s"] for r in rows]) if rows else float("nan"),
        "wall_max": max((r["wall_s"] for r in rows), default=float("nan")),
    }


def print_table(summaries: list[dict], truth: float) -> None:
    head = (f"{'method':<22} {'detect 1%':>9} {'wrong dir':>9} {'A/A FP':>7} "
            f"{'B/A-1 % median [IQR]':>24} {'A/A % median [IQR]':>22} "
            f"{'|d-true|<0.5 AB/AA':>18} {'wall s med/max':>15}")
    print(head)
    print("-" * len(head))
    for s in summaries:
        q1, m, q3 = s["diff_ab"]
        p1, pm, p3 = s["diff_aa"]
        print(f"{s['method']:<22} {100 * s['detect']:>8.0f}% {100 * s['wrong']:>8.0f}% {100 * s['fp']:>6.0f}% "
              f"{m:>+7.2f} [{q1:+.2f},{q3:+.2f}]{'':>2} {pm:>+7.2f} [{p1:+.2f},{p3:+.2f}] "
              f"{100 * s['close_ab']:>8.0f}%/{100 * s['close_aa']:>3.0f}% "
              f"{s['wall_median']:>7.1f}/{s['wall_max']:<6.1f}")
    print(f"(true difference of the loop: +1.00%; expected on wall time incl. exec: +{truth:.2f}%)")


# ---------------------------------------------------------------- main

def parse_kbench(spec: str) -> tuple[int, int]:
    s, _, t = spec.lower().partition("x")
    return int(s), int(t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20, help="repetitions of every comparison (default 20)")
    ap.add_argument("--kbench", action="append", metavar="SxT",
                    help="kbench compare settings: samples x trials (repeatable; default 10x25)")
    ap.add_argument("--fixed", action="store_true", help="kbench: no adaptive stopping")
    ap.add_argument("--budget", type=float, default=25.0,
                    help="seconds of runs per comparison for time/taskset/hyperfine (default 25)")
    ap.add_argument("--target-ms", type=float, default=20.0, help="runtime of A (default 20 ms)")
    ap.add_argument("--methods", default="kbench,time,taskset,hyperfine",
                    help="comma-separated subset of kbench,time,taskset,hyperfine")
    ap.add_argument("--kbench-bin", default=str(DEFAULT_KBENCH))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args()

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    if "hyperfine" in methods and not shutil.which("hyperfine"):
        print("hyperfine not found (apt-get install -y hyperfine); skipping it", file=sys.stderr)
        methods.remove("hyperfine")
    kbench_settings = [parse_kbench(s) for s in (args.kbench or ["10x25"])]
    rng = random.Random(args.seed)

    with tempfile.TemporaryDirectory(prefix="kbench-sens-") as tmp:
        info = prepare(Path(tmp), args.target_ms)
        truth = info["expected_wall_diff_pct"]
        # Runs per side for the classic methods: fill the budget with A and B runs.
        n_classic = max(5, int(args.budget / (2 * info["t_A_ms"] / 1e3 * 1.05)))
        print(f"A: {info['iters_A']} iterations, {info['t_A_ms']:.2f} ms; B: {info['iters_B']} "
              f"(+1%), {info['t_B_ms']:.2f} ms; exec of an empty program {info['t_zero_ms']:.2f} ms; "
              f"classic methods: {n_classic} runs per side", flush=True)

        tasks: list[tuple[str, dict]] = []
        for s, t in kbench_settings:
            tasks.append((f"kbench {s}x{t}{' fixed' if args.fixed else ''}", {"kind": "kbench", "s": s, "t": t}))
        if "time" in methods:
            tasks.append(("time", {"kind": "time", "pin": False}))
        if "taskset" in methods:
            tasks.append(("taskset+time", {"kind": "time", "pin": True}))
        if "hyperfine" in methods:
            tasks.append(("hyperfine", {"kind": "hyperfine"}))
        if "kbench" not in methods:
            tasks = [x for x in tasks if x[1]["kind"] != "kbench"]

        rows: dict[str, list[dict]] = {name: [] for name, _ in tasks}
        started = time.monotonic()
        for rep in range(args.reps):
            order = [(name, cfg, pair) for name, cfg in tasks for pair in ("A/B", "A/A")]
            rng.shuffle(order)
            for name, cfg, pair in order:
                a, b = info["A"], info["B"] if pair == "A/B" else info["A2"]
                t0 = time.monotonic()
                try:
                    if cfg["kind"] == "kbench":
                        r = run_kbench(args.kbench_bin, a, b, cfg["s"], cfg["t"], args.fixed,
                                       seed=rng.randrange(1 << 30))
                    elif cfg["kind"] == "time":
                        r = run_time_loop(a, b, n_classic, cfg["pin"])
                    else:
                        r = run_hyperfine(a, b, n_classic)
                except (RuntimeError, subprocess.CalledProcessError) as exc:
                    print(f"  rep {rep + 1} {name} {pair}: failed: {exc}", file=sys.stderr, flush=True)
                    continue
                r.update(pair=pair, rep=rep, wall_s=time.monotonic() - t0)
                rows[name].append(r)
                extra = f" {r['verdict']}" if "verdict" in r else ""
                print(f"  rep {rep + 1:>2} {name:<18} {pair} d={r['diff_pct']:+6.2f}%{extra} "
                      f"({r['wall_s']:.1f} s)", flush=True)
            print(f"rep {rep + 1}/{args.reps} done, {time.monotonic() - started:.0f} s elapsed", flush=True)

        summaries = [summarise(name, rows[name], truth) for name, _ in tasks]
        print()
        print_table(summaries, truth)
        if args.json_out:
            args.json_out.write_text(json.dumps(
                {"setup": info, "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
                 "n_classic": n_classic, "summary": summaries, "raw": rows}, indent=1))
            print(f"raw results: {args.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
