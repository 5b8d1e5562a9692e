"""Kernel-function benchmarks provided by kbench.ko (see kmod/benches/)."""

from __future__ import annotations

from kbench.catalog.benchmarks import Benchmark


def kfunc_benchmarks() -> tuple[Benchmark, ...]:
    """Filled in with kbench.ko's bench table (issue 3)."""
    return ()
