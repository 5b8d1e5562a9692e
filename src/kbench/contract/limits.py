"""The limits a measurement request must stay within, checked before anything runs.

They are the limits of the tools that do the work (``kbench-probe``, ``kbench.ko``, see
docs/probe-format.md and docs/sysfs-ABI.md) plus a cap on the total work, so that a typo
such as ``--samples 1000000000000`` is a usage error naming the limit (exit 2) instead
of a run that fails, or runs for days, after a VM has booted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbench.contract.request import DEFAULT_SAMPLES, RunRequest

KFUNC_DEFAULT_WARMUP = 100


@dataclass(frozen=True)
class KindLimits:
    """What one kind of benchmark accepts (a kind names its own: ``kinds.base.Kind.limits``)."""

    kind: str
    """The kind's name, for the messages."""
    max_samples: int
    max_warmup_samples: int
    max_batch: int
    max_calls: int
    """(samples + warm-up samples) × batch: operations in one run (per CPU for kbench.ko)."""
    default_warmup_samples: int | None = None
    """The warm-up samples of a run that asks for none; None: 1% of the samples, at least 10."""
    count_based: bool = False
    """Runs take a count of samples (and of warm-up samples), never a duration."""

    def warmup_for(self, samples: int) -> int:
        """The warm-up samples a run of ``samples`` samples takes when it asks for none."""
        if self.default_warmup_samples is not None:
            return self.default_warmup_samples
        return max(10, samples // 100)


PROBE = KindLimits("probe", max_samples=10**8, max_warmup_samples=10**8, max_batch=1 << 24, max_calls=10**11)
"""kbench-probe's limits (docs/probe-format.md)."""
KFUNC = KindLimits("kfunc", max_samples=10**7, max_warmup_samples=10**7, max_batch=10**6, max_calls=10**9,
                   default_warmup_samples=KFUNC_DEFAULT_WARMUP, count_based=True)
"""kbench.ko's limits (docs/sysfs-ABI.md)."""
MAX_DURATION_S = 1e6
"""Longest ``--duration`` and warm-up duration (about 11.6 days; the probe's own limit)."""
MAX_ITERATIONS = 10**5
"""Most fresh tool runs (``--iterations``) of one whole-tool benchmark run."""


@dataclass(frozen=True)
class LimitProblem:
    """``field`` (samples, warmup, batch, duration, iterations, cpu) and what is wrong."""

    field: str
    message: str

    def __str__(self) -> str:
        return self.message


def request_problems(
    request: RunRequest, limits: KindLimits | None, cpus: Sequence[int] | None = None
) -> list[LimitProblem]:
    """Everything in ``request`` beyond ``limits`` (its benchmark's kind's: ``Kind.limits``; None:
    no sample, warm-up and batch limits) on a target whose usable CPUs are ``cpus`` (None: not checked)."""
    problems = []
    if limits is not None:
        kind = limits.kind
        samples = request.samples if request.samples is not None else DEFAULT_SAMPLES
        if samples > limits.max_samples:
            problems.append(LimitProblem(
                "samples", f"samples {samples} is more than the limit of {limits.max_samples:,} samples "
                           f"for a {kind} benchmark"))
        warmup = request.warmup_samples
        if warmup is not None and warmup > limits.max_warmup_samples:
            problems.append(LimitProblem(
                "warmup", f"warm-up {warmup} samples is more than the limit of "
                          f"{limits.max_warmup_samples:,} for a {kind} benchmark"))
        if request.batch is not None and request.batch > limits.max_batch:
            problems.append(LimitProblem(
                "batch", f"batch {request.batch} is more than the limit of {limits.max_batch:,} operations "
                         f"per sample for a {kind} benchmark"))
        elif request.batch is not None and request.duration_s is None:
            if warmup is None:
                warmup = limits.warmup_for(samples)
            calls = (samples + warmup) * request.batch
            if calls > limits.max_calls:
                problems.append(LimitProblem(
                    "batch", f"(samples + warm-up) × batch = ({samples} + {warmup}) × {request.batch} = {calls:,} "
                             f"operations, more than the limit of {limits.max_calls:,} for one {kind} run"))
    for name, seconds in (("duration", request.duration_s), ("warmup", request.warmup_duration_s)):
        if seconds is not None and limits is not None and limits.count_based:
            label = "duration" if name == "duration" else "warm-up duration"
            problems.append(LimitProblem(
                name, f"{limits.kind} benchmarks run inside the kernel and are count-based: give a count of samples "
                      f"(--samples) and of warm-up samples, not a {label}"))
        elif seconds is not None and seconds > MAX_DURATION_S:
            label = "duration" if name == "duration" else "warm-up duration"
            problems.append(LimitProblem(
                name, f"{label} {exact_seconds(seconds)} is more than the limit of {exact_seconds(MAX_DURATION_S)} "
                      f"({MAX_DURATION_S / 86400:.1f} days)"))
    if request.iterations > MAX_ITERATIONS:
        problems.append(LimitProblem(
            "iterations", f"iterations {request.iterations} is more than the limit of {MAX_ITERATIONS:,}"))
    if cpus is not None and request.cpu is not None and request.cpu not in cpus:
        problems.append(LimitProblem("cpu", f"cpu {request.cpu} does not exist on this target; its usable CPUs "
                                            f"are {cpu_list(cpus)}"))
    return problems


def exact_seconds(seconds: float) -> str:
    """``1,000,000 s``, ``1000000.4 s``: never rounded, so a value just over a limit does
    not read as the limit itself."""
    if seconds.is_integer() and abs(seconds) < 1e15:
        return f"{int(seconds):,} s"
    return f"{seconds!r} s"


def cpu_list(cpus: Sequence[int]) -> str:
    """``0-3,8`` for [0, 1, 2, 3, 8]."""
    ordered = sorted(set(cpus))
    parts: list[str] = []
    start = prev = None
    for cpu in [*ordered, None]:
        if cpu is not None and prev is not None and cpu == prev + 1:
            prev = cpu
            continue
        if start is not None and prev is not None:
            parts.append(str(start) if start == prev else f"{start}-{prev}")
        start = prev = cpu
    return ",".join(parts) or "none"
