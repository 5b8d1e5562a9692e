#!/usr/bin/env python3
"""Issue 37's goals for instruction counts (``--metric instructions``), measured.

Suites (``--suites``, default all):

- ``aa-user``: ``kbench compare --command ./loop200 --command COPY --metric instructions`` where
  COPY is a byte copy of loop200 at a longer path; counts identical (change 0 exactly)?
- ``user``: ``kbench compare --command ./loop199 --command ./loop200 --metric instructions`` with one
  CPU-bound loop running beside it the whole time (2 cores: one busy); ``regression``, and its
  wall time (goal <= 10 s, every time). loopN runs N units of 10 000 xorshift steps.
- ``aa-kernel``: ``kbench compare kfunc.rotmix --module tests/data/kmod/rotmix.c -p 'tag=1|2'
  --metric instructions --kernel K --json`` (each its own boot): change 0 exactly?
- ``kernel``: the same with ``-p 'work=300|301'``: ``regression`` at +0.25 .. +0.34 %, exact, in
  one run; its wall time with the boot (goal <= 60 s).
- ``overhead``: what kbench's TCG plugin costs a guest: boots with and without it in
  alternating rounds, each timing the boot, a kbench.ko run of kfunc.spin (loops=1000, 200 000
  samples of 4 calls: the host's wall time of reading ``run``) and a probe run of getppid (20 000
  samples); medians side by side and the median ratio with / without.
- ``table``: seed 004's table by counts, in-kernel (``kbench sensitivity kfunc.spin -p
  'loops=98|99|100' --metric instructions --kernel K``) and in user space (loop98/99/100).

Usage: .venv/bin/python benchmarks/instructions.py [--reps 10] [--kernel deb:6.1.0-56-amd64]
       [--suites aa-user,user,aa-kernel,kernel,overhead,table] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ROTMIX = REPO / "tests" / "data" / "kmod" / "rotmix.c"
LOOP = r"""
#include <stdint.h>
static volatile uint64_t sink;
int main(void)
{
    uint64_t x = 88172645463325252ULL;
    for (long u = 0; u < UNITS; u++)
        for (long i = 0; i < 10000; i++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        }
    sink = x;
    return 0;
}
"""
SUITES = ("aa-user", "user", "aa-kernel", "kernel", "overhead", "table")


def kbench(*args: str, db: Path) -> tuple[dict[str, Any] | str, float, int]:
    """(JSON output or text, wall seconds, exit status) of one ``kbench`` command."""
    env = dict(os.environ, KBENCH_DB=str(db))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "kbench.cli", *args], capture_output=True, text=True, env=env)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        print(f"  kbench {' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}", flush=True)
        return proc.stderr, elapsed, proc.returncode
    try:
        return json.loads(proc.stdout), elapsed, 0
    except json.JSONDecodeError:
        return proc.stdout, elapsed, 0


@contextmanager
def one_cpu_busy() -> Iterator[None]:
    """A CPU-bound loop beside the measurement (the load the goal is stated under)."""
    proc = subprocess.Popen(["sh", "-c", "while :; do :; done"])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def build_loops(directory: Path, units: tuple[int, ...]) -> dict[int, Path]:
    (directory / "loop.c").write_text(LOOP)
    built = {}
    for n in units:
        built[n] = directory / f"loop{n}"
        subprocess.run(["gcc", "-O2", f"-DUNITS={n}", "-o", str(built[n]), str(directory / "loop.c")], check=True)
    return built


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    walls = [row["wall_s"] for row in rows]
    verdicts: dict[str, int] = {}
    for row in rows:
        verdicts[row["verdict"]] = verdicts.get(row["verdict"], 0) + 1
    changes = [row["change_pct"] for row in rows if row.get("change_pct") is not None]
    return {"reps": len(rows), "verdicts": verdicts, "change_pct": sorted(set(changes)),
            "wall_s_median": round(statistics.median(walls), 2) if walls else None,
            "wall_s_max": round(max(walls), 2) if walls else None, "rows": rows}


def compared(args: list[str], db: Path) -> dict[str, Any]:
    report, wall, status = kbench(*args, "--metric", "instructions", "--json", db=db)
    if status != 0 or not isinstance(report, dict):
        return {"verdict": f"exit {status}", "wall_s": wall}
    first = report["metrics"][0]
    return {"verdict": first["verdict"], "change_pct": first["change_pct"], "base": first["base"],
            "new": first["new"], "exact": str(first.get("reason", "")).startswith("exact"), "wall_s": round(wall, 2)}


def suite_aa_user(args: argparse.Namespace, work: Path, db: Path) -> dict[str, Any]:
    loops = build_loops(work, (200,))
    far = work / "a-directory-with-a-longer-name" / "copy-of-loop200"
    far.parent.mkdir(exist_ok=True)
    shutil.copy2(loops[200], far)
    rows = [compared(["compare", "--command", str(loops[200]), "--command", str(far)], db) for _ in range(args.reps)]
    return summary(rows)


def suite_user(args: argparse.Namespace, work: Path, db: Path) -> dict[str, Any]:
    loops = build_loops(work, (199, 200))
    with one_cpu_busy():
        rows = [compared(["compare", "--command", str(loops[199]), "--command", str(loops[200])], db)
                for _ in range(args.reps)]
    return summary(rows)


def suite_kernel(args: argparse.Namespace, db: Path, varied: str) -> dict[str, Any]:
    rows = [compared(["compare", "kfunc.rotmix", "--module", str(ROTMIX), "-p", varied, "--kernel", args.kernel], db)
            for _ in range(args.reps)]
    return summary(rows)


def suite_overhead(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Boots with and without the plugin in alternating rounds (each a fresh guest)."""
    from kbench.contract.request import RunRequest
    from kbench.kinds.kfunc.catalog import kfunc_benchmarks
    from kbench.kinds.probe import probe_benchmarks
    from kbench.targets.vm_target import VmTarget

    spin = next(b for b in kfunc_benchmarks() if b.name == "kfunc.spin")
    getppid = next(b for b in probe_benchmarks() if b.name == "syscall.getppid")
    samples: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
    for rep in range(args.reps):
        for counting in ((False, True) if rep % 2 == 0 else (True, False)):
            found = samples[counting]
            started = time.monotonic()
            target = VmTarget(args.kernel, count_instructions=counting, console_log=work / f"console-{counting}.log")
            try:
                target.start()
                found.setdefault("boot_s", []).append(time.monotonic() - started)
                assert target.module is not None
                began = time.monotonic()
                target.module.run(spin, RunRequest(spin.name, params={"loops": "1000"}, samples=200000, batch=4))
                found.setdefault("kfunc_run_s", []).append(time.monotonic() - began)
                began = time.monotonic()
                target.run_probe(RunRequest(getppid.name, samples=20000, batch=16).probe_args("getppid"), bound=300)
                found.setdefault("probe_run_s", []).append(time.monotonic() - began)
            finally:
                target.close()
        print(f"  overhead round {rep + 1}: " + ", ".join(
            f"{key} {samples[False][key][-1]:.2f} / {samples[True][key][-1]:.2f} s" for key in samples[False]),
            flush=True)
    result: dict[str, Any] = {}
    for key in samples[False]:
        without, with_plugin = samples[False][key], samples[True][key]
        ratios = [b / a for a, b in zip(without, with_plugin, strict=True)]
        result[key] = {"without_median": round(statistics.median(without), 3),
                       "with_median": round(statistics.median(with_plugin), 3),
                       "ratio_median": round(statistics.median(ratios), 2), "ratios": [round(r, 2) for r in ratios]}
    return result


def suite_table(args: argparse.Namespace, work: Path, db: Path) -> dict[str, Any]:
    loops = build_loops(work, (98, 99, 100))
    kernel, wall_k, _ = kbench("sensitivity", "kfunc.spin", "-p", "loops=98|99|100", "--kernel", args.kernel,
                               "--metric", "instructions", "--json", db=db)
    user, wall_u, _ = kbench("sensitivity", *[a for n in (98, 99, 100) for a in ("--command", str(loops[n]))],
                             "--metric", "instructions", "--json", db=db)
    return {"kernel": kernel, "kernel_wall_s": round(wall_k, 1), "user": user, "user_wall_s": round(wall_u, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--kernel", default="deb:6.1.0-56-amd64")
    ap.add_argument("--suites", default=",".join(SUITES))
    ap.add_argument("--json", type=Path, help="write every figure here")
    args = ap.parse_args()
    chosen = [s for s in args.suites.split(",") if s]
    unknown = [s for s in chosen if s not in SUITES]
    if unknown:
        ap.error(f"unknown suites {unknown}; choose among {', '.join(SUITES)}")
    results: dict[str, Any] = {"load_at_start": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="kbench-instructions-") as tmp:
        work, db = Path(tmp), Path(tmp) / "bench.db"
        for name in chosen:
            print(f"== {name}", flush=True)
            if name == "aa-user":
                results[name] = suite_aa_user(args, work, db)
            elif name == "user":
                results[name] = suite_user(args, work, db)
            elif name == "aa-kernel":
                results[name] = suite_kernel(args, db, "tag=1|2")
            elif name == "kernel":
                results[name] = suite_kernel(args, db, "work=300|301")
            elif name == "overhead":
                results[name] = suite_overhead(args, work)
            else:
                results[name] = suite_table(args, work, db)
            shown = {k: v for k, v in results[name].items() if k not in ("rows", "kernel", "user")}
            print(f"  {json.dumps(shown)}", flush=True)
    results["load_at_end"] = os.getloadavg()[0]
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
