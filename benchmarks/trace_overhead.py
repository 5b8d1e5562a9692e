#!/usr/bin/env python3
"""The instruments' own cost, in one boot: tracepoint pairs, the bare timer pair, a kretprobe.

Usage:
    .venv/bin/python benchmarks/trace_overhead.py [--kernel deb:6.1.0-56-amd64] [--samples 20000]
        [--rounds 5] [--json]

Boots the kernel once (KVM when it works on this host, else TCG: the same script serves
hardware unchanged) and, in each of ``--rounds`` rounds, measures side by side:

- the module's bare timer pair: the median of 4096 back-to-back ``rdtsc_ordered()`` pairs
  (``overhead_sample`` of a ``kfunc.empty`` run);
- a tracepoint pair with the log on, in each log layout (``percpu``, ``shared``), by the
  seed's nested pair (``kfunc.trace_overhead``): effective overhead (the empty inner pair)
  and total overhead (outer - inner);
- the same pairs timed by the harness, which resolves finer than the emulated TSC's
  step: (``trace_overhead`` - ``empty``) per call / 2 at batch 16 (a call runs two pairs),
  with the log on in each layout and with the log off;
- a kretprobe on an empty function (``kbench_probe_target``): effective overhead (the
  durations it logs) and total (the function's cycles per call, probed - not probed);
- ``fib_table_lookup`` timed in place by a kretprobe while ``kfunc.fib4_lookup`` runs,
  against the same benchmark's own loop without the probe (timed before and after it, at
  batch 1 like the probe): agreement in %, raw and with each method's own overhead taken
  off (the probe's effective overhead, measured just before, from the traced median; the
  harness's cost per call, ``kfunc.empty`` at batch 1, from the loop's).

The layouts alternate within a round (the order flips every round); the agreement is
computed within each round, because a TCG guest changes speed by up to 1.9x from one
phase to the next. Every figure is the median over rounds of the per-round medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

import numpy as np

from kbench.catalog.benchmarks import lookup
from kbench.engine.request import RunRequest
from kbench.targets.vm_target import VmTarget
from kbench.trace.kernel import KernelTraceLog
from kbench.trace.log import KIND_FUNCTION
from kbench.trace.overhead import tracepoint_overhead
from kbench.trace.selection import measured_entries
from kbench.trace.session import measure_probe_overhead, run_with_log

LOOP_BATCH = 16
"""Calls per sample when the harness times tracepoint pairs against the empty bench."""
BATCHED_SAMPLES = 2000
"""2000 samples x 16 calls x 2 entries fit in either layout's room of the default log."""


def _per_call(measurement: Any) -> float:
    return float(np.median(measurement.per_op("cycles")))


def one_round(target: VmTarget, samples: int, flip: bool) -> dict[str, float]:
    module = target.module
    assert module is not None
    log = KernelTraceLog(module.io)
    empty, pairs, fib = lookup("kfunc.empty"), lookup("kfunc.trace_overhead"), lookup("kfunc.fib4_lookup")
    out: dict[str, float] = {}

    bare = module.run(empty, RunRequest(benchmark=empty.name, samples=samples, batch=1))
    out["timer_pair"] = float(bare.header["overhead"]["median_ticks"])

    harness = _per_call(module.run(empty, RunRequest(benchmark=empty.name, samples=samples, batch=LOOP_BATCH)))
    layouts = ["percpu", "shared"]
    for layout in reversed(layouts) if flip else layouts:
        log.set_layout(layout)
        _, trace = run_with_log(module, log, pairs, RunRequest(benchmark=pairs.name, samples=samples,
                                                               params={"outer": "0", "inner": "1"}, batch=1))
        overhead = tracepoint_overhead(trace)
        out[f"{layout}_effective"] = overhead.median_effective
        out[f"{layout}_total"] = overhead.median_total
        out[f"{layout}_effective_mean"] = overhead.effective.mean
        out[f"{layout}_total_mean"] = overhead.total.mean
        # The same pairs timed by the harness, LOOP_BATCH calls per sample: finer than the
        # emulated TSC's step. Few enough samples that the log never overflows.
        batched, trace = run_with_log(module, log, pairs, RunRequest(
            benchmark=pairs.name, samples=BATCHED_SAMPLES, params={"outer": "0", "inner": "1"},
            batch=LOOP_BATCH))
        assert trace.overflow == 0
        out[f"{layout}_pair_batched"] = (_per_call(batched) - harness) / 2
    log.set_layout("percpu")

    off = _per_call(module.run(pairs, RunRequest(benchmark=pairs.name, samples=samples, batch=LOOP_BATCH)))
    out["disabled_pair"] = (off - harness) / 2
    out["harness_per_call"] = harness

    probe = measure_probe_overhead(module, log)
    out["probe_effective"] = probe.median_effective
    out["probe_total"] = probe.total

    # Agreement: everything at batch 1, as the probe times single calls; the unprobed loop
    # and its harness before and after the probed run, the probe's overhead just before it.
    single = RunRequest(benchmark=fib.name, samples=samples, batch=1)
    empty_single = RunRequest(benchmark=empty.name, samples=samples, batch=1)
    loops, harnesses = [], []

    def loop() -> None:
        loops.append(_per_call(module.run(fib, single)))
        harnesses.append(_per_call(module.run(empty, empty_single)))

    loop()
    probe_now = measure_probe_overhead(module, log)
    log.probe("fib_table_lookup")
    try:
        _, trace = run_with_log(module, log, fib, single)
    finally:
        log.unprobe("fib_table_lookup")
    loop()
    entries = measured_entries(trace).entries
    calls = entries[entries["kind"] == KIND_FUNCTION]["cycles"]
    out["traced_median"] = float(np.median(calls))
    out["traced_calls"] = float(calls.size)
    out["loop_per_call"] = float(np.mean(loops))
    out["loop_harness"] = float(np.mean(harnesses))
    out["agreement_probe_effective"] = probe_now.median_effective
    loop_function = out["loop_per_call"] - out["loop_harness"]
    traced_function = out["traced_median"] - probe_now.median_effective
    out["agreement_raw_pct"] = 100 * (out["traced_median"] / out["loop_per_call"] - 1)
    out["agreement_corrected_pct"] = 100 * (traced_function / loop_function - 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="deb:6.1.0-56-amd64")
    parser.add_argument("--samples", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rounds = []
    with VmTarget(args.kernel) as target:
        if target.module is None:
            print(f"kbench.ko did not load: {target.module_error}", file=sys.stderr)
            return 1
        accel = target.session.accel if target.session else "?"
        for r in range(args.rounds):
            rounds.append(one_round(target, args.samples, flip=bool(r % 2)))
            print(f"round {r + 1}/{args.rounds}: " + " ".join(f"{k}={v:.0f}" for k, v in rounds[-1].items()),
                  file=sys.stderr, flush=True)
    med = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    spread = {key: (min(r[key] for r in rounds), max(r[key] for r in rounds))
              for key in ("agreement_raw_pct", "agreement_corrected_pct")}
    summary = {
        "kernel": args.kernel, "accel": accel, "rounds": args.rounds, "samples": args.samples, "medians": med,
        "agreement_spread_pct": spread,
        "cheaper_layout": "percpu" if med["percpu_pair_batched"] <= med["shared_pair_batched"] else "shared",
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"{args.kernel} ({accel}), {args.rounds} rounds of {args.samples} samples; medians over rounds, cycles\n")
    print("| instrument | effective (added to a measurement) | total (added to execution) |")
    print("|---|---|---|")
    print(f"| bare timer pair (two `rdtsc_ordered()`) | {med['timer_pair']:.0f} | {med['timer_pair']:.0f} |")
    for layout in ("percpu", "shared"):
        print(f"| tracepoint pair, log on, `{layout}` | {med[f'{layout}_effective']:.0f} "
              f"(mean {med[f'{layout}_effective_mean']:.1f}) | {med[f'{layout}_total']:.0f} "
              f"(mean {med[f'{layout}_total_mean']:.1f}) |")
    for layout in ("percpu", "shared"):
        print(f"| tracepoint pair, log on, `{layout}`, timed by the harness at batch {LOOP_BATCH} | | "
              f"{med[f'{layout}_pair_batched']:.1f} |")
    print(f"| tracepoint pair, log off, timed by the harness at batch {LOOP_BATCH} | 0 | {med['disabled_pair']:.1f} |")
    print(f"| kretprobe on an empty function | {med['probe_effective']:.0f} | {med['probe_total']:.0f} |")
    print(f"\ncheaper log layout: {summary['cheaper_layout']}")
    print("\n| fib_table_lookup, batch 1 | cycles per call |")
    print("|---|---|")
    print(f"| kbench.ko's loop, `kfunc.fib4_lookup` (before and after) | {med['loop_per_call']:.0f} |")
    print(f"| ... its harness, `kfunc.empty` | {med['loop_harness']:.0f} |")
    print(f"| `kbench trace fib_table_lookup` meanwhile, median of {med['traced_calls']:.0f} calls | "
          f"{med['traced_median']:.0f} |")
    print(f"| ... the probe's effective overhead, measured just before | {med['agreement_probe_effective']:.0f} |")
    low, high = spread["agreement_raw_pct"]
    print(f"\nagreement, trace vs loop, median over rounds: raw {med['agreement_raw_pct']:+.1f} % "
          f"({low:+.1f} … {high:+.1f}); ", end="")
    low, high = spread["agreement_corrected_pct"]
    print(f"each method's own overhead taken off {med['agreement_corrected_pct']:+.1f} % ({low:+.1f} … {high:+.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
