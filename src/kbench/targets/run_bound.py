"""How long kbench waits for a run in a guest before it stops it: the run's own bound.

A guest that oopses, locks up or hangs a task says so on its console, and the session's
health watch stops the run within seconds. The bound is the last resort for a run that
is merely much slower than it should be: ten times its expected length, plus a minute.
"""

from __future__ import annotations

MIN_BOUND_S = 60.0
SLACK = 10.0
UNMEASURED_CALL_S = 1e-3
"""What an in-kernel call is assumed to cost when nothing has timed it yet (a given
batch, first run): a millisecond, far more than the functions kbench times take."""


def bound_for(expected_s: float) -> float:
    """``MIN_BOUND_S + SLACK × expected_s``."""
    return MIN_BOUND_S + SLACK * max(expected_s, 0.0)


def kfunc_bound(calls: int, cycles_per_call: float, tsc_hz: float) -> float:
    """The bound of an in-kernel run of ``calls`` calls (warm-up included) that the
    calibration timed at ``cycles_per_call`` (its 95th percentile) each."""
    return bound_for(calls * cycles_per_call / max(tsc_hz, 1.0))


def timed_bound(duration_s: float, warmup_s: float) -> float:
    """A duration-mode run: its durations, half as much again, plus a minute."""
    return MIN_BOUND_S + 1.5 * (duration_s + warmup_s)
