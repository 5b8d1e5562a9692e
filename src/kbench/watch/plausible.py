"""A side-by-side comparison of two builds is evidence only if each side measured what its build measured before.

A build whose program did not really run (a workspace another process removed, say) gives
executions of a fraction of a millisecond where the same build took 60 ms, and a comparison of
such executions finds a huge "change". Failed executions are never timed (the probe stops at the
first), so this is the second line: each side's median CPU time per execution in the comparison
is checked against the CPU time per execution of the runs that build had already stored (the
watch's own measurement of the commit, its bisection trials: the runs tagged ``commit:SHA12``).
A side outside [smallest / ``FACTOR``, largest × ``FACTOR``] of those is a failed measurement.
"""

from __future__ import annotations

from kbench.builds.compare import BuildComparison, SideSummary
from kbench.store.db import Store

FACTOR = 2.0
"""A side whose median lies below half the smallest or above twice the largest earlier run of its
build is not evidence (machine load moves a program's CPU time by a few percent, not 2x)."""


def implausible(store: Store, found: BuildComparison) -> str | None:
    """Why ``found`` cannot be evidence, or None when both sides agree with their builds' earlier runs
    (or a build has none to compare with)."""
    for side in (found.base, found.new):
        why = _side(store, side)
        if why is not None:
            return why
    return None


def earlier_cpu_ns(store: Store, commit: str) -> list[float]:
    """The median CPU time (user + system, ns) per execution of each complete ``command`` run of ``commit``."""
    import numpy as np

    medians = []
    for row in store.list_runs(benchmark="command", status="complete", tag=f"commit:{commit[:12]}", limit=None):
        columns = store.load_samples(int(row["id"]))
        if "utime_ns" in columns and "stime_ns" in columns and columns["utime_ns"].size:
            cpu = columns["utime_ns"].astype(np.float64) + columns["stime_ns"].astype(np.float64)
            medians.append(float(np.median(cpu)))
    return medians


def _side(store: Store, side: SideSummary) -> str | None:
    earlier = earlier_cpu_ns(store, side.commit)
    if not earlier or not side.slots:
        return None
    low, high = min(earlier) / FACTOR, max(earlier) * FACTOR
    if low <= side.median <= high:
        return None
    return (f"the comparison measured {side.commit[:12]} at {side.median / 1e6:.3f} ms of CPU per execution, far "
            f"outside what the same build measured before ({min(earlier) / 1e6:.3f} .. {max(earlier) / 1e6:.3f} ms "
            f"in {len(earlier)} runs): a failed measurement, not evidence")
