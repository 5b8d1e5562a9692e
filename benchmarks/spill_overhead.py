#!/usr/bin/env python3
"""What streaming samples to the spill costs, and how much of a run a kill leaves.

Usage:
    .venv/bin/python benchmarks/spill_overhead.py [--rounds 9] [--duration 5] [--kills 20]
        [--kernel deb:6.1.0-56-amd64] [--kfunc-samples 2000000] [--json]

1. **Probe run** (this kernel): ``syscall.getppid`` for ``--duration`` seconds, batch 32,
   pinned to the last CPU, with and without ``--spill``, side by side in every round (the
   order alternates). Figure: the median per-call time of each run; the cost is the
   median over rounds of (with / without - 1). A second method, for when the machine's
   noise hides a cost that small: the time the probe's once-a-second write takes (as
   many rows as the runs took per second, to a file in the same directory), as a share
   of the second it serves.
2. **kbench.ko run** (``--kernel``, one guest for all): ``kfunc.empty``, batch 64, the same
   way with and without following ``samples_live`` into a spill. Cycles per call. (Both
   sides run the same kbench.ko, which publishes its count after every sample either way.)
3. **Kill at a random moment** (``--kills`` times): a probe run (the arguments kbench
   gives it) is frozen with SIGSTOP at a moment drawn uniformly from 2-12 s into its
   measurement, and its spill copied: exactly what kill -9 would leave (a frozen process
   writes nothing more). It is then let go and stopped with SIGINT, so that its output
   holds every sample it took up to the freeze. The samples that ended more than a
   second before the freeze (times from the samples' own durations, walking back from
   the one the freeze fell in) are counted, and the share of them in the copied spill is
   the figure (goal >= 99 %).
4. **kbench killed** (``--kills`` / 4 times): ``kbench run syscall.getppid --duration 30s``
   killed with SIGKILL at a random 3-12 s; then the run's stored sample count (after
   the next kbench opened the store) against the rows the spill held after the kill.

The load average before and after is printed: on a shared machine it is part of the result.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from kbench.contract.request import RunRequest
from kbench.contract.spill import read_spill, spill_head
from kbench.kinds.kfunc.catalog import builtin_benchmark
from kbench.native import find_native
from kbench.targets.local import LocalTarget
from kbench.targets.probe_measurement import measurement_from_invocation
from kbench.targets.probe_output import parse_probe_output

BATCH = 32
KFUNC_BATCH = 64
FREEZE_WINDOW_S = (2.0, 12.0)
KILL_WINDOW_S = (3.0, 12.0)
OLDER_THAN_S = 1.0
GAP_ALLOWANCE = 0.98
"""Ages come from the samples' own durations, which leave out the few tens of ns between
samples (under 1 % of the time at 4 µs a sample): a sample counts as older than a second
from 0.98 s of summed durations, so that no truly older sample is left out of the count."""


def loadavg() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def last_cpu() -> int:
    return max(os.sched_getaffinity(0))


def probe_cost(rounds: int, duration: float, scratch: Path) -> dict[str, Any]:
    target, cpu = LocalTarget(), last_cpu()
    args = ["run", "getppid", "--duration", repr(duration), "--batch", str(BATCH), "--cpu", str(cpu)]
    figures: dict[str, list[float]] = {"off": [], "on": []}
    rates = []
    for round_ in range(rounds):
        for side in (("off", "on") if round_ % 2 == 0 else ("on", "off")):
            spill = scratch / "probe.spill" if side == "on" else None
            invocation = target.run_probe(args, spill=spill)
            measurement = measurement_from_invocation(invocation)
            figures[side].append(float(np.median(measurement.per_op("ns"))))
            rates.append(measurement.n / float(measurement.header["elapsed_s"]))
            if spill is not None:
                rows = spill_head(spill)
                assert rows is not None and rows.rows == measurement.n, "the spill lacks rows"
                spill.unlink()
    result = _side_by_side(figures, "ns per call")
    result["rows_per_second"] = float(np.median(rates))
    result["write_ms_per_second"] = _write_ms(int(np.median(rates)), scratch)
    result["write_share_pct"] = result["write_ms_per_second"] / 10.0
    return result


def _write_ms(rows: int, scratch: Path, repeats: int = 21) -> float:
    """Median milliseconds of one write(2) of ``rows`` u64 rows appended to a file in ``scratch``."""
    data = np.arange(rows, dtype="<u8").tobytes()
    path = scratch / "write.spill"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    times = []
    try:
        for _ in range(repeats):
            started = time.perf_counter()
            os.write(fd, data)
            times.append((time.perf_counter() - started) * 1e3)
    finally:
        os.close(fd)
        path.unlink()
    return float(np.median(times))


def kfunc_cost(rounds: int, kernel: str, samples: int, scratch: Path) -> dict[str, Any]:
    from kbench.targets.vm_target import VmTarget

    bench = builtin_benchmark("kfunc.empty")
    request = RunRequest(benchmark=bench.name, samples=samples, batch=KFUNC_BATCH, warmup_samples=1000)
    figures: dict[str, list[float]] = {"off": [], "on": []}
    with VmTarget(kernel) as target:
        module = target.module
        assert module is not None, target.module_error
        for round_ in range(rounds):
            for side in (("off", "on") if round_ % 2 == 0 else ("on", "off")):
                spill = scratch / "kfunc.spill" if side == "on" else None
                measurement = module.run(bench, request, spill)
                figures[side].append(float(np.median(measurement.per_op("cycles"))))
                if spill is not None:
                    contents = read_spill(spill)
                    assert contents is not None and contents.rows > 0, "nothing was streamed"
                    spill.unlink()
    return _side_by_side(figures, "cycles per call")


def _side_by_side(figures: dict[str, list[float]], unit: str) -> dict[str, Any]:
    off, on = np.array(figures["off"]), np.array(figures["on"])
    ratios = on / off - 1.0
    return {"unit": unit, "off": figures["off"], "on": figures["on"], "median_off": float(np.median(off)),
            "median_on": float(np.median(on)), "cost_pct": float(np.median(ratios) * 100),
            "cost_pct_rounds": [round(float(r) * 100, 3) for r in ratios]}


def frozen_kill_share(kills: int, scratch: Path, rng: random.Random) -> dict[str, Any]:
    probe = find_native("kbench-probe")
    shares, olds = [], []
    for _ in range(kills):
        spill, output, copy = scratch / "k.spill", scratch / "k.bin", scratch / "k.copy"
        proc = subprocess.Popen([str(probe), "run", "getppid", "--duration", "60", "--batch", str(BATCH),
                                 "--output", str(output), "--spill", str(spill)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while spill_head(spill) is None:  # the header goes out just before the first measured sample
            time.sleep(0.005)
        time.sleep(rng.uniform(*FREEZE_WINDOW_S))
        proc.send_signal(signal.SIGSTOP)
        shutil.copyfile(spill, copy)
        proc.send_signal(signal.SIGCONT)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
        taken = parse_probe_output(output.read_bytes()).column("ticks")
        hz = float(parse_probe_output(output.read_bytes()).header["timer"]["hz"])
        left = read_spill(copy)
        recovered = 0 if left is None else left.rows
        # The freeze fell in the sample after the last one the output has (that one was cut by SIGINT),
        # so the last sample of the output ended at the freeze at the latest: walk back from there.
        ended_before = np.cumsum(taken[::-1])[::-1] / hz  # seconds from each sample's end to the last's end
        old = int(np.count_nonzero(ended_before - taken / hz >= OLDER_THAN_S * GAP_ALLOWANCE))
        olds.append(old)
        shares.append(min(recovered, old) / old if old else 1.0)
        for path in (spill, output, copy):
            path.unlink(missing_ok=True)
    return {"kills": kills, "share_median": float(np.median(shares)), "share_min": float(np.min(shares)),
            "samples_older_than_1s_median": float(np.median(olds)), "shares": [round(s, 5) for s in shares]}


def kbench_kills(kills: int, scratch: Path, rng: random.Random) -> dict[str, Any]:
    kbench = str(Path(sys.executable).parent / "kbench")
    trials = []
    for i in range(kills):
        db = scratch / f"kill-{i}.db"
        env = dict(os.environ, KBENCH_DB=str(db))
        proc = subprocess.Popen([kbench, "run", "syscall.getppid", "--duration", "30s"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        spill = db.with_name(db.name + "-spill") / "run-1.spill"
        while spill_head(spill) is None:
            time.sleep(0.01)
        time.sleep(rng.uniform(*KILL_WINDOW_S))
        proc.kill()
        proc.wait()
        left = _settled_rows(spill)  # once the guardian has ended the probe
        listed = json.loads(subprocess.run([kbench, "results", "--json"], env=env, capture_output=True,
                                           text=True, check=True).stdout)
        from kbench.store.db import Store

        Store.open(f"sqlite:///{db}").engine.dispose()  # the next kbench that opens the store for writing
        with sqlite3.connect(db) as conn:
            status, stored = conn.execute("SELECT status, n_samples FROM runs").fetchone()
        trials.append({"spill_rows": left, "shown": listed[0]["n_samples"], "stored": stored, "status": status})
    return {"trials": trials, "all_stored": all(t["stored"] == t["spill_rows"] > 0 for t in trials)}


def _settled_rows(spill: Path, quiet_s: float = 1.5) -> int:
    """The spill's rows once it has not grown for ``quiet_s`` (its writer is gone)."""
    rows, since = -1, time.monotonic()
    while True:
        head = spill_head(spill)
        now_rows = 0 if head is None else head.rows
        if now_rows != rows:
            rows, since = now_rows, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            return rows
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--kernel", default=None)
    parser.add_argument("--kfunc-samples", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    result: dict[str, Any] = {"load_before": loadavg()}
    with tempfile.TemporaryDirectory(prefix="kbench-spill-bench-") as tmp:
        scratch = Path(tmp)
        result["probe"] = probe_cost(args.rounds, args.duration, scratch)
        if args.kernel:
            result["kfunc"] = kfunc_cost(args.rounds, args.kernel, args.kfunc_samples, scratch)
        result["frozen_kill"] = frozen_kill_share(args.kills, scratch, rng)
        result["kbench_kill"] = kbench_kills(max(1, args.kills // 4), scratch, rng)
    result["load_after"] = loadavg()
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"load average before: {result['load_before']}")
    for name in ("probe", "kfunc"):
        if name in result:
            r = result[name]
            print(f"{name}: median without spill {r['median_off']:.2f} {r['unit']}, with {r['median_on']:.2f}; "
                  f"cost {r['cost_pct']:+.2f} % (median of rounds; rounds {r['cost_pct_rounds']})")
    r = result["probe"]
    print(f"probe: one second's rows ({r['rows_per_second']:.0f}) written in {r['write_ms_per_second']:.3f} ms: "
          f"{r['write_share_pct']:.4f} % of the second")
    f = result["frozen_kill"]
    print(f"kill at a random moment ({f['kills']} times): share of the samples older than 1 s in the spill: "
          f"median {f['share_median'] * 100:.3f} %, min {f['share_min'] * 100:.3f} % "
          f"(median {f['samples_older_than_1s_median']:.0f} such samples)")
    k = result["kbench_kill"]
    print(f"kbench killed -9 ({len(k['trials'])} times): stored = spilled rows in every trial: {k['all_stored']} "
          f"{[(t['spill_rows'], t['stored'], t['status']) for t in k['trials']]}")
    print(f"load average after: {result['load_after']}")


if __name__ == "__main__":
    main()
