#!/usr/bin/env python3
"""VM turnaround: boot a kernel in qemu, (load a module,) run one probe command, collect, power off.

This is the latency a developer pays per measurement on a VM target. The first run
builds and caches everything (kernel download, module build, initramfs, PVH vmlinux)
and is reported separately; the figure is the median of the following runs.

    .venv/bin/python benchmarks/vm_turnaround.py                   # TCG, 1 + 5 runs
    .venv/bin/python benchmarks/vm_turnaround.py --module kmod     # also insmod kbench.ko
    .venv/bin/python benchmarks/vm_turnaround.py --accel auto --json

Goal: median <= 6 s under TCG on the development machines (2 cores).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from kbench.targets.vm import VmSession, build_initramfs, build_module, default_cache_dir, resolve_kernel

PHASES = ("boot", "module", "probe", "poweroff", "total")


def one_run(kernel, files, module_name: str | None, probe_argv: list[str], accel: str, cache_dir: Path) -> dict:
    t0 = time.monotonic()
    s = VmSession(kernel, files, accel=accel, cache_dir=cache_dir)
    t_boot = time.monotonic()
    try:
        if module_name:
            r = s.exec(["insmod", f"/lib/kbench/{module_name}.ko"], timeout=60)
            if r.rc != 0:
                raise SystemExit(f"insmod {module_name}.ko failed: {r.stderr.decode(errors='replace')}")
        t_mod = time.monotonic()
        r = s.exec(probe_argv, timeout=120)
        if r.rc != 0:
            raise SystemExit(f"{' '.join(probe_argv)} failed ({r.rc}): {r.stderr.decode(errors='replace')}")
        header_line, _, raw = r.stdout.partition(b"\n")
        header = json.loads(header_line)
        assert len(raw) == header["n"] * len(header["columns"]) * 8
        t_probe = time.monotonic()
    finally:
        s.close()
    t_end = time.monotonic()
    return {
        "boot": t_boot - t0,
        "module": t_mod - t_boot,
        "probe": t_probe - t_mod,
        "poweroff": t_end - t_probe,
        "total": t_end - t0,
        "accel": s.accel,
        "guest_uptime_at_hello": s.guest_uptime_at_hello_s,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="deb:6.1.0-56-amd64", help="kernel spec (default %(default)s)")
    ap.add_argument("--module", type=Path, help="module source dir to build and insmod (e.g. kmod)")
    ap.add_argument("--runs", type=int, default=5, help="timed runs after the first (default %(default)s)")
    ap.add_argument("--accel", default="tcg", choices=("tcg", "kvm", "auto"))
    ap.add_argument("--samples", type=int, default=1000, help="probe samples (getppid)")
    ap.add_argument("--cache-dir", type=Path, default=None)
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args(argv)

    cache_dir = args.cache_dir or default_cache_dir()
    t0 = time.monotonic()
    kernel = resolve_kernel(args.kernel, cache_dir)
    files: dict[str, Path] = {}
    module_name = None
    if args.module:
        kos = build_module(args.module, kernel, cache_dir)
        for ko in kos:
            files[f"/lib/kbench/{ko.name}"] = ko
        module_name = kos[0].stem
    build_initramfs(kernel, files, cache_dir)
    prepare_s = time.monotonic() - t0
    probe_argv = ["kbench-probe", "run", "getppid", "--samples", str(args.samples)]

    first = one_run(kernel, files, module_name, probe_argv, args.accel, cache_dir)
    runs = [one_run(kernel, files, module_name, probe_argv, args.accel, cache_dir) for _ in range(args.runs)]
    median = {p: statistics.median(r[p] for r in runs) for p in PHASES}
    result = {
        "kernel": kernel.release,
        "accel": runs[0]["accel"] if runs else first["accel"],
        "module": module_name,
        "prepare_s": prepare_s,
        "first": first,
        "runs": runs,
        "median": median,
    }
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print(f"kernel {kernel.release}, accel {result['accel']}, module {module_name or '-'}")
        print(f"prepare (resolve + build, cached after the first time): {prepare_s:.2f} s")
        print(f"{'':8}" + "".join(f"{p:>10}" for p in PHASES))
        print(f"{'first':8}" + "".join(f"{first[p]:10.2f}" for p in PHASES))
        for i, r in enumerate(runs, 1):
            print(f"{'run ' + str(i):8}" + "".join(f"{r[p]:10.2f}" for p in PHASES))
        print(f"{'median':8}" + "".join(f"{median[p]:10.2f}" for p in PHASES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
