"""In-kernel timing overhead: kbench.ko's `empty` bench vs back-to-back ordered TSC reads.

Usage: .venv/bin/python benchmarks/kernel_overhead.py [--kernel deb:6.1.0-56-amd64] [--samples N]

Boots the kernel once (qemu), then for batch sizes 1..64 runs kfunc.empty and records the
median cycles per sample. Two independent estimates of the cost of the timed region:
  - the module's own `overhead_sample`: median of 4096 back-to-back rdtsc_ordered pairs;
  - the intercept of median(sample) = intercept + slope * batch (least squares over
    batches): what a sample costs with zero calls in it.
Their ratio is the check (goal <= 1.1). The slope is the per-call cost of an empty
indirect call in this kernel (retpolines included), reported too.
"""

from __future__ import annotations

import argparse

import numpy as np

from kbench.catalog.benchmarks import lookup
from kbench.contract.request import RunRequest
from kbench.targets.vm_target import VmTarget

BATCHES = (1, 2, 4, 8, 16, 32, 64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", default="deb:6.1.0-56-amd64")
    parser.add_argument("--samples", type=int, default=20000)
    args = parser.parse_args()
    bench = lookup("kfunc.empty")
    medians, overheads = [], []
    with VmTarget(args.kernel) as target:
        assert target.module is not None, target.module_error
        accel = target.session.accel if target.session else "?"
        for batch in BATCHES:
            m = target.module.run(bench, RunRequest(benchmark=bench.name, samples=args.samples, batch=batch))
            medians.append(float(np.median(m.columns["ticks"])))
            overheads.append(float(m.header["overhead"]["median_ticks"]))
    slope, intercept = np.polyfit(np.array(BATCHES, dtype=float), np.array(medians), 1)
    module_overhead = float(np.median(overheads))
    print(f"kernel {args.kernel} under {accel}, {args.samples} samples per batch size")
    print("batch  median cycles/sample  cycles/call  module overhead_sample")
    for batch, median, overhead in zip(BATCHES, medians, overheads, strict=True):
        print(f"{batch:>5}  {median:>20.1f}  {median / batch:>11.1f}  {overhead:>22.0f}")
    print(f"fit: sample = {intercept:.1f} + {slope:.2f} * batch cycles")
    print(f"timed-region cost: module {module_overhead:.0f} cycles, regression intercept {intercept:.1f} cycles, "
          f"ratio {module_overhead / intercept:.3f} (goal <= 1.1)")
    print(f"empty call at batch 1: {medians[0]:.0f} cycles = {medians[0] / module_overhead:.2f}x the timer pair")


if __name__ == "__main__":
    main()
