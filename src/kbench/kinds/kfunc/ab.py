"""kfunc sides alternated inside kbench.ko: the A/B runs behind an interleaved comparison of kernel code.

A comparison of in-kernel benchmarks on one target (parameter values of one benchmark,
or two modules' benchmarks) alternates its sides inside one kernel thread
(``kbench.targets.kmod_ab``): slots of about ``SLOT_TARGET_S``, many blocks to one run
of the module. ``KernelSlots`` holds kbench.ko for the whole comparison, fixes the batch
and the slot size from a pilot run, and makes the runs.

- batch (calls per sample): one for every side, the smallest power of two that makes a
  sample of the cheapest side at least ``SAMPLE_TO_OVERHEAD_TARGET`` times the empty
  timed region (so also at least 100x the timer's resolution), at most ``MAX_AUTO_BATCH``;
- samples per slot: enough for a slot of the costliest side to last ``SLOT_TARGET_S``,
  from ``MIN_SLOT_SAMPLES`` (the slot's value is a trimmed mean of them) to
  ``MAX_SLOT_SAMPLES``, and never a slot longer than half of what kbench.ko allows.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.kinds.base import transport_of
from kbench.targets.base import Target, TargetError
from kbench.targets.kmod_ab import (
    MAX_RECORDS,
    NOT_IN_A_SIDE,
    SLOT_MAX_S,
    AbRun,
    AbSettings,
    AbSide,
    run_ab,
    supports_ab,
)
from kbench.targets.kmod_sysfs import KMOD_FORMAT, MAX_AUTO_BATCH, SAMPLE_TO_OVERHEAD_TARGET, KbenchModule
from kbench.targets.run_bound import bound_for
from kbench.targets.transport import RunWrapper

SLOT_TARGET_S = 25e-6
"""How long a slot lasts: short, because a TCG guest switches between speeds ~1.5x apart
within fractions of a millisecond (measured: A/A block log-ratios spread 1-4 % with 7 to
430 us slots, and blocks come ten times faster with the short ones)."""
MIN_SLOT_SAMPLES = 8
MAX_SLOT_SAMPLES = 1024
PILOT_BLOCKS = 8
WARMUP_BLOCKS = 1
"""Unrecorded blocks at the start of every run (the sides' first calls after set-up)."""


class SlotsTooLong(TargetError):
    """A side's single call does not fit a slot inside kbench.ko: whole runs must be the slots."""


def ab_side(benchmark: Benchmark, request: RunRequest) -> AbSide:
    """The side line of a kfunc run request (its parameters; ``NOT_IN_A_SIDE`` left out)."""
    return AbSide(benchmark.workload, {k: v for k, v in request.params.items() if k not in NOT_IN_A_SIDE})


def why_not_in_module(target: Target, sides: Sequence[tuple[Benchmark, RunRequest]]) -> str | None:
    """None when these sides can alternate inside kbench.ko on ``target``, else why not."""
    if isinstance(target, RunWrapper):
        return "the target wraps every run (tracking, stored values)"
    if any(benchmark.kind != "kfunc" for benchmark, _ in sides):
        return "not every side is an in-kernel benchmark"
    for _, request in sides:
        if request.params.get("parallel", "0") not in ("0", "false", "no"):
            return "a side runs on several CPUs at once (parallel=1)"
        if "cpus" in request.params:
            return "a side names CPUs for a parallel run (cpus)"
    if len({request.cpu for _, request in sides}) > 1:
        return "the sides are pinned to different CPUs"
    if len({request.batch for _, request in sides}) > 1:
        return "the sides ask for different batches"
    return None


@dataclass(frozen=True)
class SlotPlan:
    """What every slot holds (fixed after the pilot)."""

    batch: int
    slot_samples: int
    slot_s: float  # expected length of the costliest side's slot

    def describe(self) -> str:
        return (f"{self.slot_samples} samples of batch {self.batch} (about {self.slot_s * 1e6:.0f} us), "
                "alternated inside one kbench.ko thread")


class KernelSlots:
    """The sides' A/B runs in the kbench.ko of one target (``opened`` holds the module)."""

    def __init__(self, target: Target, sides: Sequence[tuple[Benchmark, RunRequest]]):
        self.transport = transport_of(target, sides[0][0])
        self.sides = [ab_side(benchmark, request) for benchmark, request in sides]
        self.names = [benchmark.name for benchmark, _ in sides]
        self.requests = [request for _, request in sides]
        self.module: KbenchModule | None = None
        self.plan: SlotPlan | None = None
        self.tsc_khz = 0
        self.pilot_run: AbRun | None = None

    @contextmanager
    def opened(self) -> Iterator[KernelSlots | None]:
        """The module for the whole comparison; None when this kbench.ko has no A/B runs."""
        with self.transport.kbench_module(self.names[0]) as module:
            if not supports_ab(module):
                yield None
                return
            self.module = module
            self.tsc_khz = module.tsc_khz()
            try:
                yield self
            finally:
                self.module = None

    def pilot(self, slot_samples: int | None, order_seed: int) -> SlotPlan:
        """One short run of single-call samples, not judged: each side's cost per call and
        timer overhead fix the batch and the samples per slot (module docstring).
        SlotsTooLong when even one call is too long for a slot; AbSideError (a TargetError) when
        kbench.ko refuses a side or its set-up fails."""
        tsc_hz = self.tsc_khz * 1000.0
        given_batch = self.requests[0].batch
        settings = AbSettings(blocks=PILOT_BLOCKS, slot_samples=1, batch=1, warmup=2, order_seed=order_seed,
                              cpu=self.requests[0].cpu)
        run = self._run(settings, calls_s=1e-3 * len(self.sides) * 2 * (PILOT_BLOCKS + 2))
        self.pilot_run = run
        import numpy as np

        per_call = [float(np.median(run.records["cycles"][run.records["side"] == i]))
                    for i in range(len(self.sides))]
        overhead = max(max(run.overhead(i) for i in range(len(self.sides))), 1)
        limit = SLOT_MAX_S * tsc_hz / 2
        costliest = max(max(per_call), 1.0)
        if costliest > limit:
            raise SlotsTooLong(f"a call of {self.names[per_call.index(costliest)]} takes about "
                              f"{costliest / tsc_hz * 1e3:.1f} ms: too long to alternate inside kbench.ko "
                              f"(slots of at most {SLOT_MAX_S * 1e3 / 2:g} ms)")
        batch = given_batch or 1
        if given_batch is None:
            cheapest = max(min(per_call), 1.0)
            while (batch * cheapest < SAMPLE_TO_OVERHEAD_TARGET * overhead and batch < MAX_AUTO_BATCH
                   and 2 * batch * costliest <= limit):
                batch *= 2
        sample = batch * costliest
        fits = max(1, math.floor(limit / sample))
        target = math.ceil(SLOT_TARGET_S * tsc_hz / sample)
        wanted = slot_samples or min(MAX_SLOT_SAMPLES, max(MIN_SLOT_SAMPLES, target))
        count = min(wanted, fits, MAX_RECORDS // (2 * len(self.sides)))
        self.plan = SlotPlan(batch=batch, slot_samples=count, slot_s=count * sample / tsc_hz)
        return self.plan

    def run(self, blocks: int, order_seed: int) -> AbRun:
        """``blocks`` recorded blocks (at most what kbench.ko keeps in one run) in one A/B run."""
        plan = self.plan
        if plan is None:
            raise ValueError("run the pilot first")
        blocks = max(1, min(blocks, self.max_blocks_per_run()))
        settings = AbSettings(blocks=blocks, slot_samples=plan.slot_samples, batch=plan.batch,
                              warmup=WARMUP_BLOCKS, order_seed=order_seed, cpu=self.requests[0].cpu)
        return self._run(settings, calls_s=2 * len(self.sides) * (blocks + WARMUP_BLOCKS) * plan.slot_s)

    def max_blocks_per_run(self) -> int:
        plan = self.plan
        assert plan is not None
        return max(1, MAX_RECORDS // (2 * len(self.sides) * plan.slot_samples))

    def _run(self, settings: AbSettings, calls_s: float) -> AbRun:
        if self.module is None:
            raise ValueError("open the module first")
        return run_ab(self.module, self.sides, settings, bound_s=bound_for(calls_s))

    def header(self, run: AbRun, side: int) -> dict[str, Any]:
        """The header of a side's stored run: a kfunc run's (``KMOD_FORMAT``) with the A/B settings."""
        request = self.requests[side]
        settings = run.settings
        return {
            "format": KMOD_FORMAT,
            "workload": self.sides[side].bench,
            "params": dict(request.params),
            "mode": "count",
            "batch": settings.batch,
            "batch_auto": request.batch is None,
            "timer": {"name": "tsc (kernel, rdtsc_ordered)", "hz": run.tsc_khz * 1000, "tsc_khz": run.tsc_khz},
            "overhead": {"median_ticks": run.overhead(side), "min_ticks": run.overhead(side)},
            "parallel": False,
            "ab": {"side": side, "line": self.sides[side].line(), "slot_samples": settings.slot_samples,
                   "warmup_blocks": settings.warmup, "sides": [s.line() for s in self.sides],
                   "kernel_run": run.run_text, "kernel_status": run.status},
            "warnings": [],
        }
