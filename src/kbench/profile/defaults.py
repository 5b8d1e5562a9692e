"""What kbench counts and profiles unless told otherwise, and why (benchmarks/counters_overhead.py)."""

from __future__ import annotations

COUNTED_KINDS = frozenset({"probe", "scale", "suite", "kfunc"})
"""The kinds of benchmark that take counters: the probe's workloads (will-it-scale's tasks
included) and kbench.ko count around their measured loops, a suite's tool runs under ``perf stat``."""

COUNTERS_BY_DEFAULT_KINDS = frozenset({"probe", "kfunc"})
"""``kbench run`` counts by default for the probe's workloads (syscalls, commands) and for
in-kernel benchmarks: measured on this VM (docs/PERFORMANCE.md, issue 24), --counters moved
getppid's per-operation median by -0.25% and a 100 ms command's CPU time by +0.4% (median of
paired rounds), within the goals of 2% and 1%; kbench.ko's counters moved the per-call median
of kfunc.fib4_lookup by -0.4% and of kfunc.spin loops=100 by 0.0% in a TCG guest (20 paired
rounds, quartiles of the round ratios within 1.5%): they are switched outside the timed loop.
A suite's tool runs under ``perf stat`` (another process, inherited counters in every worker)
and will-it-scale's tasks inherit theirs: not shown negligible on this loaded machine, so off
unless asked."""

COUNTERS_BY_DEFAULT = False
"""``kbench compare`` judges counters only when asked (--counters): each counter is one more
secondary metric, and a larger family makes the multiple-comparison correction stricter for the
timed secondary metrics (a command's wall time)."""


def counters_by_default(kind: str) -> bool:
    """Whether ``kbench run`` counts for a benchmark of ``kind`` unless told otherwise."""
    return kind in COUNTERS_BY_DEFAULT_KINDS
