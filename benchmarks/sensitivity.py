"""Which measuring method can see 1%? Every method on the same 1% pairs and A/A pairs, side by side.

Usage: python benchmarks/sensitivity.py [--reps R] [--suites loop,syscall,kfunc,...] [--budget SEC]
                                        [--target-ms MS] [--step PCT] [--busy] [--kernel SPEC]
                                        [--methods NAMES] [--json-out FILE]

Three suites, each a pair exactly 1% apart in work ("A/B") and a pair of identical work
("A/A"), every method run on both pairs R times in a shuffled order (so slow drift of the
host does not line up with one method), each comparison with the same time budget:

loop - a CPU-bound xorshift loop of about --target-ms (gcc -O2, iterations compiled in),
  B with exactly 1% more iterations (--step PCT: another step, e.g. 0.5), A' a byte-identical
  copy of A at another path:
  - ``kbench cpu``: ``kbench compare --command A --command B -p shell=0 --json`` with its
    defaults (interleaved slots, CPU time, default budget and margin). Detected = verdict
    "regression"; an A/A false positive = any verdict but "no change".
  - ``kbench wall``: the same with ``--metric wall``.
  - ``time``: a bash loop running ``time A; time B`` alternately for the budget;
    "different" when Welch's t-test on the two sets of wall times gives p < 0.05.
  - ``taskset+time``: the same under ``taskset -c 1``.
  - ``hyperfine``: ``hyperfine -N --warmup 3 --runs n A B`` filling the budget; "different"
    when |mean_B - mean_A| > 2 standard errors of the difference (hyperfine prints no verdict).
  - ``interleaved+KS``: a plain script alternating A and B one execution at a time
    (wall time from Python), two-sample Kolmogorov-Smirnov test, p < 0.05.
  For the classic methods the A/A false positives are any "different".
syscall - ``syscall.getppid`` against the probe's variant with ``spin=1`` (dependent
  arithmetic added to every call, about +1%); A/A is ``spin=0|00`` (the same value
  spelled twice):
  - ``kbench probe``: ``kbench compare syscall.getppid -p spin=0|1 --json`` (interleaved probe
    runs, defaults);
  - ``probe A then B``: the probe run for half the budget on A then on B (no interleaving),
    Mann-Whitney on the per-sample values, p < 0.05 - what a single ``kbench run`` of each gives.
kfunc100, kfunc400, kfunc2000 - ``kfunc.spin`` in a Debian kernel under qemu (``--kernel``),
  N dependent steps against N + N/100 (exactly 1% more work; under TCG the cost is not quite
  linear near 100 loops); A/A is ``seed=1|2`` at N loops (the seed only moves the starting
  value of the arithmetic):
  - ``kbench in-kernel``: ``kbench compare kfunc.spin -p loops=N|N+N/100 --kernel K --json``
    (one boot per comparison, counted in its wall time; the sides alternate inside one
    kbench.ko thread, kbench.engine.in_kernel).
  kfunc - kfunc400 with a second method beside it:
  - ``kbench whole runs``: the same with ``--whole-runs`` (whole kbench.ko runs alternated from
    outside, the design before in-kernel A/B runs).
table - seed 004's table in-kernel: ``kbench sensitivity kfunc.spin -p loops=98|99|100 --kernel K
  --json`` R times; the signed-rank / KS p-value matrix with its A/A diagonal.

Truth: the loop's true difference in CPU time is 1% of its loop part (the exec/exit part,
measured with an empty build, is common to both); getppid's is measured once at the start
with a long kbench comparison (``--budget 90s --fixed``), reported as such.

Printed per suite and method: detected (right sign), wrong sign, A/A flagged, the
estimates of B/A - 1 (median and IQR) and their run-to-run CV over the A/B repetitions,
wall seconds per comparison (median, max) and the load average around the runs. Then the
precision ratio: CV of kbench's estimate / the best peer's CV (goal <= 1.0).

Goals (issue 10): kbench detects >= 95% of the 1% pairs with the right sign, flags <= 5%
of A/A pairs, each comparison <= 30 s; in-kernel (issue 25, under TCG): >= 95% found, >= 95%
A/A "no change", <= 60 s per comparison including the boot. Results of every comparison go to --json-out as they
come (rerun with --resume FILE to add repetitions).
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

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
ALPHA = 0.05
Result = dict[str, Any]
Method = tuple[str, Callable[..., Result]]
Suite = tuple[dict[str, Any], list[Method]]


# ---------------------------------------------------------------- the pairs

def build(workdir: Path, iters: int, name: str) -> Path:
    src = workdir / "loop.c"
    if not src.exists():
        src.write_text(SOURCE)
    out = workdir / name
    subprocess.run(["gcc", "-O2", f"-DITERS={iters}", "-o", str(out), str(src)], check=True)
    return out


def cpu_seconds(binary: Path, runs: int = 9, *, wall: bool = False) -> float:
    """Median CPU seconds (user + system, from wait4) of one execution, or its wall seconds."""
    found = []
    for _ in range(runs):
        t0 = time.perf_counter()
        pid = os.posix_spawn(str(binary), [str(binary)], os.environ)
        _, _, usage = os.wait4(pid, 0)
        found.append(time.perf_counter() - t0 if wall else usage.ru_utime + usage.ru_stime)
    return statistics.median(found)


def prepare_loop(workdir: Path, target_ms: float, step_pct: float = 1.0) -> dict[str, Any]:
    zero = build(workdir, 0, "zero")
    calibration = build(workdir, 20_000_000, "calibration")
    per_iter = max(cpu_seconds(calibration) - cpu_seconds(zero), 1e-6) / 20_000_000
    iters = max(int(target_ms / 1000 / per_iter) // 100 * 100, 100_000)
    more = round(iters * (1 + step_pct / 100))
    a, b = build(workdir, iters, "A"), build(workdir, more, "B")
    a2 = workdir / "A2"
    shutil.copyfile(a, a2)
    os.chmod(a2, 0o755)
    t_zero, t_a = cpu_seconds(zero), cpu_seconds(a)
    return {"A": str(a), "B": str(b), "A2": str(a2), "iters_A": iters, "iters_B": more,
            "cpu_zero_ms": 1e3 * t_zero, "cpu_A_ms": 1e3 * t_a, "wall_A_ms": 1e3 * cpu_seconds(a, wall=True),
            "truth_pct": (more / iters - 1) * 100 * max(t_a - t_zero, 0.0) / t_a}


# ---------------------------------------------------------------- methods

def kbench_compare(kbench: str, args: list[str], seed: int) -> Result:
    out = subprocess.run([kbench, "compare", *args, "--seed", str(seed), "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"kbench failed ({out.returncode}): {out.stderr.strip()[-400:]}")
    report = json.loads(out.stdout)
    metric = report["metrics"][0]
    verdict = metric["verdict"]
    return {"diff_pct": metric["change_pct"], "verdict": verdict, "p_value": metric.get("p_value"),
            "ci_pct": metric.get("ci_pct"), "blocks": report["parameters"].get("blocks"),
            "reason": metric.get("reason", "")[:120], "multimodal": metric.get("multimodal"),
            "slower": verdict == "regression", "faster": verdict == "improvement",
            "flagged": verdict != "no change"}


def time_loop(a: str, b: str, budget: float, per_run_s: float, pin: bool) -> Result:
    n = max(5, int(budget / (2 * per_run_s)))
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
    return _two_sets(ta, tb, stats.ttest_ind(tb, ta, equal_var=False).pvalue)


def hyperfine(a: str, b: str, budget: float, per_run_s: float) -> Result:
    n = max(5, int(budget / (2 * per_run_s)))
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "h.json"
        subprocess.run(["hyperfine", "-N", "--warmup", "3", "--runs", str(n), "--style", "none",
                        "--export-json", str(f), a, b], check=True, capture_output=True)
        res = json.loads(f.read_text())["results"]
    (ma, sa), (mb, sb) = [(r["mean"], r["stddev"] or 0.0) for r in res]
    different = abs(mb - ma) > 2 * ((sa**2 + sb**2) / n) ** 0.5
    return {"diff_pct": 100 * (mb / ma - 1), "n": n, "slower": different and mb > ma,
            "faster": different and mb < ma, "flagged": different}


def interleaved_ks(a: str, b: str, budget: float) -> Result:
    times: dict[str, list[float]] = {a: [], b: []}
    started = time.monotonic()
    while time.monotonic() - started < budget:
        for binary in (a, b):
            t0 = time.perf_counter()
            subprocess.run([binary], check=True)
            times[binary].append(time.perf_counter() - t0)
    return _two_sets(times[a], times[b], stats.ks_2samp(times[a], times[b]).pvalue)


def probe_then(kbench: str, a: list[str], b: list[str], budget: float) -> Result:
    probe = str(Path(kbench).with_name("kbench-probe"))
    medians = []
    samples = []
    for params in (a, b):
        args = [probe, "run", "getppid", *[x for p in params for x in ("-p", p)], "--duration", str(budget / 2)]
        out = subprocess.run(args, capture_output=True, check=True).stdout
        newline = out.index(b"\n")
        header = json.loads(out[:newline])
        ns = np.frombuffer(out[newline + 1:], dtype="<u8") / header["timer"]["hz"] * 1e9 / header["batch"]
        medians.append(float(np.median(ns)))
        samples.append(ns)
    p = stats.mannwhitneyu(samples[1], samples[0]).pvalue
    different = p < ALPHA
    return {"diff_pct": 100 * (medians[1] / medians[0] - 1), "p_value": float(p),
            "slower": different and medians[1] > medians[0], "faster": different and medians[1] < medians[0],
            "flagged": different}


def _two_sets(ta: list[float], tb: list[float], p: float) -> Result:
    ma, mb = statistics.median(ta), statistics.median(tb)
    different = p < ALPHA
    return {"diff_pct": 100 * (statistics.fmean(tb) / statistics.fmean(ta) - 1), "n": len(ta), "p_value": float(p),
            "slower": different and mb > ma, "faster": different and mb < ma, "flagged": different}


# ---------------------------------------------------------------- summary

def quartiles(values: list[float]) -> tuple[float, float, float]:
    if not values:
        return (float("nan"),) * 3
    q = np.percentile(values, [25, 50, 75])
    return float(q[0]), float(q[1]), float(q[2])


def summarise(rows: list[Result]) -> dict[str, Any]:
    ab = [r for r in rows if r["pair"] == "A/B"]
    aa = [r for r in rows if r["pair"] == "A/A"]

    def rate(items: list[Result], key: Callable[[Result], bool]) -> float:
        return sum(1 for r in items if key(r)) / len(items) if items else float("nan")

    estimates = [r["diff_pct"] for r in ab if r["diff_pct"] is not None and np.isfinite(r["diff_pct"])]
    cv = (float(np.std(estimates, ddof=1) / abs(np.mean(estimates)))
          if len(estimates) > 1 and np.mean(estimates) != 0 else float("nan"))
    return {
        "n_ab": len(ab), "n_aa": len(aa),
        "detect": rate(ab, lambda r: r["slower"]), "wrong": rate(ab, lambda r: r["faster"]),
        "aa_flagged": rate(aa, lambda r: r["flagged"]),
        "diff_ab": quartiles(estimates), "diff_aa": quartiles([r["diff_pct"] for r in aa if r["diff_pct"] is not None]),
        "cv": cv,
        "wall_median": statistics.median([r["wall_s"] for r in rows]) if rows else float("nan"),
        "wall_max": max((r["wall_s"] for r in rows), default=float("nan")),
        "load": quartiles([r["load"] for r in rows]),
    }


def print_table(suite: str, summaries: dict[str, dict[str, Any]], truth: float) -> None:
    print(f"\n{suite}: true difference +{truth:.2f}%")
    head = (f"{'method':<18} {'detect':>7} {'wrong':>6} {'A/A':>5} {'B/A-1 % median [IQR]':>24} {'CV':>6} "
            f"{'A/A % median':>12} {'wall s med/max':>15} {'load':>10}")
    print(head)
    print("-" * len(head))
    for name, s in summaries.items():
        q1, m, q3 = s["diff_ab"]
        _, am, _ = s["diff_aa"]
        l1, lm, l3 = s["load"]
        print(f"{name:<18} {100 * s['detect']:>6.0f}% {100 * s['wrong']:>5.0f}% {100 * s['aa_flagged']:>4.0f}% "
              f"{m:>+7.2f} [{q1:+.2f},{q3:+.2f}]{'':>3} {s['cv']:>6.2f} {am:>+12.2f} "
              f"{s['wall_median']:>7.1f}/{s['wall_max']:<6.1f} {lm:>4.1f} [{l1:.1f}-{l3:.1f}]")


# ---------------------------------------------------------------- suites

def loop_suite(args: argparse.Namespace, workdir: Path) -> Suite:
    info = prepare_loop(workdir, args.target_ms, args.step)
    per_run = info["wall_A_ms"] / 1e3 * 1.05
    kb = args.kbench_bin

    def pair(kind: str) -> tuple[str, str]:
        return info["A"], info["B"] if kind == "A/B" else info["A2"]

    methods: list[Method] = [
        ("kbench cpu", lambda kind, seed: kbench_compare(kb, ["--command", pair(kind)[0], "--command", pair(kind)[1],
                                                              "-p", "shell=0"], seed)),
        ("kbench wall", lambda kind, seed: kbench_compare(kb, ["--command", pair(kind)[0], "--command", pair(kind)[1],
                                                               "-p", "shell=0", "--metric", "wall"], seed)),
        ("time", lambda kind, seed: time_loop(*pair(kind), args.budget, per_run, pin=False)),
        ("taskset+time", lambda kind, seed: time_loop(*pair(kind), args.budget, per_run, pin=True)),
        ("interleaved+KS", lambda kind, seed: interleaved_ks(*pair(kind), args.budget)),
    ]
    if shutil.which("hyperfine"):
        methods.append(("hyperfine", lambda kind, seed: hyperfine(*pair(kind), args.budget, per_run)))
    print(f"loop: A {info['iters_A']} iterations, {info['cpu_A_ms']:.1f} ms CPU; B +{args.step:g}% iterations; "
          f"exec of an empty program {info['cpu_zero_ms']:.2f} ms CPU; true CPU difference "
          f"+{info['truth_pct']:.3f}%", flush=True)
    return info, methods


def syscall_suite(args: argparse.Namespace, workdir: Path) -> Suite:
    kb = args.kbench_bin
    values = {"A/B": "spin=0|1", "A/A": "spin=0|00"}
    truth = kbench_compare(kb, ["syscall.getppid", "-p", values["A/B"], "--budget", "90s", "--fixed"], 12345)
    methods: list[Method] = [
        ("kbench probe", lambda kind, seed: kbench_compare(kb, ["syscall.getppid", "-p", values[kind]], seed)),
        ("probe A then B", lambda kind, seed: probe_then(kb, ["spin=0"], ["spin=1" if kind == "A/B" else "spin=0"],
                                                         args.budget)),
    ]
    print(f"syscall: getppid vs spin=1, measured once over 90 s: {truth['diff_pct']:+.3f}% "
          f"(CI {truth['ci_pct'][0]:+.3f}..{truth['ci_pct'][1]:+.3f}%)", flush=True)
    return {"truth_pct": truth["diff_pct"], "truth_ci_pct": truth["ci_pct"]}, methods


def kfunc_suite(loops: int, *, whole_runs: bool = False) -> Callable[[argparse.Namespace, Path], Suite]:
    """``kfunc.spin`` at ``loops`` dependent steps against 1 % more (A/B), and seed=1|2 (A/A), in
    one Debian guest per comparison (its boot counted in the comparison's wall time)."""

    def suite(args: argparse.Namespace, workdir: Path) -> Suite:
        kb = args.kbench_bin
        more = loops + loops // 100
        values = {"A/B": ["-p", f"loops={loops}|{more}"], "A/A": ["-p", f"loops={loops}", "-p", "seed=1|2"]}

        def compare(extra: list[str]) -> Callable[[str, int], Result]:
            return lambda kind, seed: kbench_compare(kb, ["kfunc.spin", *values[kind], "--kernel", args.kernel,
                                                          *extra], seed)

        methods: list[Method] = [("kbench in-kernel", compare([]))]
        if whole_runs:
            methods.append(("kbench whole runs", compare(["--whole-runs"])))
        return {"truth_pct": 100.0 * (more - loops) / loops, "loops": loops}, methods

    return suite


SUITES = {"loop": loop_suite, "syscall": syscall_suite, "kfunc": kfunc_suite(400, whole_runs=True),
          "kfunc100": kfunc_suite(100), "kfunc400": kfunc_suite(400), "kfunc2000": kfunc_suite(2000)}
TABLE_LOOPS = (98, 99, 100)


def seed_table(args: argparse.Namespace, results: dict[str, Any], out: Path | None) -> None:
    """Seed 004's table in-kernel: `kbench sensitivity kfunc.spin -p loops=98|99|100` (one guest,
    sides alternated inside kbench.ko, no early stop), ``--reps`` times. Printed: per cell the
    median signed-rank p (KS p) over the repetitions and how often p < 0.05; the diagonal is
    the A/A split (even against odd blocks of one configuration)."""
    record = results.setdefault("table", {"rows": []})
    names = [f"loops={n}" for n in TABLE_LOOPS]
    for rep in range(args.reps):
        load = os.getloadavg()[0]
        started = time.monotonic()
        done = subprocess.run([args.kbench_bin, "sensitivity", "kfunc.spin", "-p",
                               "loops=" + "|".join(map(str, TABLE_LOOPS)), "--kernel", args.kernel,
                               "--seed", str(rep), "--json"], capture_output=True, text=True)
        if done.returncode != 0:
            print(f"  table rep {rep + 1}: failed: {done.stderr.strip()[-300:]}", file=sys.stderr, flush=True)
            continue
        row = json.loads(done.stdout)
        row.update(wall_s=time.monotonic() - started, load=(load + os.getloadavg()[0]) / 2)
        record["rows"].append(row)
        print(f"  table rep {rep + 1}: {row['blocks']} blocks, {row['wall_s']:.1f} s, load {row['load']:.1f}",
              flush=True)
        if out:
            out.write_text(json.dumps(results, indent=1, default=str))
    rows = record["rows"]
    if not rows:
        return
    paired = np.array([r["paired_p"] for r in rows], dtype=float)
    ks = np.array([r["ks_p"] for r in rows], dtype=float)
    print(f"\nseed 004's table in-kernel, {len(rows)} repetitions, {rows[0]['blocks']} blocks each; cells: median "
          "signed-rank p / median KS p [share of repetitions with p < 0.05]; diagonal: A/A (even vs odd blocks)")
    print(" " * 12 + "".join(f"{name:>32}" for name in names))
    for i, name in enumerate(names):
        cells = [f"{np.nanmedian(paired[:, i, j]):.2g} / {np.nanmedian(ks[:, i, j]):.2g} "
                 f"[{np.mean(paired[:, i, j] < 0.05):.0%}]" for j in range(len(names))]
        print(f"{name:<12}" + "".join(f"{c:>32}" for c in cells))
    walls = [r["wall_s"] for r in rows]
    print(f"wall s per table, median/max: {statistics.median(walls):.1f}/{max(walls):.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--reps", type=int, default=10, help="repetitions of every comparison (default 10)")
    ap.add_argument("--suites", default="loop,syscall,kfunc",
                    help="comma-separated subset of loop,syscall,kfunc,kfunc100,kfunc400,kfunc2000,table")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds of runs per comparison for the methods other than kbench (default 20: kbench's "
                         "default measuring budget)")
    ap.add_argument("--target-ms", type=float, default=100.0, help="CPU time of the loop A (default 100 ms)")
    ap.add_argument("--step", type=float, default=1.0, help="loop suite: B's extra iterations in %% (default 1)")
    ap.add_argument("--busy", action="store_true", help="keep one CPU busy with a spinning process throughout")
    ap.add_argument("--kernel", default="deb:6.1.0-56-amd64", help="kernel of the kfunc suite")
    ap.add_argument("--kbench-bin", default=str(DEFAULT_KBENCH))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--methods", help="comma-separated subset of the methods by name (default: every method), "
                                      "e.g. 'kbench cpu,kbench probe,kbench in-kernel'")
    ap.add_argument("--json-out", type=Path, help="write every result here as it comes")
    ap.add_argument("--resume", type=Path, help="add to the results in this file (same suites)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    results: dict[str, Any] = json.loads(args.resume.read_text()) if args.resume else {"suites": {}}
    out = args.json_out or args.resume
    os.environ.setdefault("KBENCH_DB", str(Path(tempfile.mkdtemp(prefix="kbench-sens-db-")) / "sens.db"))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        return run_suites(args, rng, results, out)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()


def run_suites(args: argparse.Namespace, rng: random.Random, results: dict[str, Any], out: Path | None) -> int:
    with tempfile.TemporaryDirectory(prefix="kbench-sens-") as tmp:
        for suite in [s.strip() for s in args.suites.split(",") if s.strip()]:
            if suite == "table":
                seed_table(args, results, out)
                continue
            info, methods = SUITES[suite](args, Path(tmp))
            if args.methods:
                wanted = {m.strip() for m in args.methods.split(",")}
                methods = [(name, fn) for name, fn in methods if name in wanted]
            record = results["suites"].setdefault(suite, {"info": info, "rows": {}})
            record["info"] = info
            rows: dict[str, list[Result]] = record["rows"]
            started = time.monotonic()
            for rep in range(args.reps):
                order = [(name, fn, pair) for name, fn in methods for pair in ("A/B", "A/A")]
                rng.shuffle(order)
                for name, fn, pair in order:
                    load = os.getloadavg()[0]
                    t0 = time.monotonic()
                    try:
                        r = fn(pair, rng.randrange(1 << 30))
                    except (RuntimeError, subprocess.CalledProcessError) as exc:
                        print(f"  rep {rep + 1} {name} {pair}: failed: {exc}", file=sys.stderr, flush=True)
                        continue
                    r.update(pair=pair, rep=rep, wall_s=time.monotonic() - t0, load=(load + os.getloadavg()[0]) / 2)
                    rows.setdefault(name, []).append(r)
                    extra = f" {r['verdict']}" if "verdict" in r else (" different" if r["flagged"] else " same")
                    print(f"  rep {rep + 1:>2} {name:<16} {pair} d={r['diff_pct']:+7.3f}%{extra} "
                          f"({r['wall_s']:.1f} s, load {r['load']:.1f})", flush=True)
                    if out:
                        out.write_text(json.dumps(results, indent=1, default=str))
                print(f"{suite} rep {rep + 1}/{args.reps} done, {time.monotonic() - started:.0f} s", flush=True)
            summaries = {name: summarise(rows[name]) for name, _ in methods if name in rows}
            record["summary"] = summaries
            print_table(suite, summaries, info["truth_pct"])
            kbench_names = [n for n in summaries if n.startswith("kbench")]
            peers = [n for n in summaries if not n.startswith("kbench") and np.isfinite(summaries[n]["cv"])]
            if kbench_names and peers:
                best = min(peers, key=lambda n: summaries[n]["cv"])
                for name in kbench_names:
                    ratio = summaries[name]["cv"] / summaries[best]["cv"]
                    print(f"precision: CV of {name}'s estimate / best peer's ({best}) = {ratio:.2f} (goal <= 1.0)")
            if out:
                out.write_text(json.dumps(results, indent=1, default=str))
    if out:
        print(f"raw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
