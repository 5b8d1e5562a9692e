"""The interleaved design inside kbench.ko: in-kernel sides alternate in slots of tens of
microseconds within one kernel thread.

``kbench.engine.interleaved`` alternates slots from outside: there a kfunc slot is a
whole run of kbench.ko read through sysfs (about 100 ms in a TCG guest), and a guest
that switches between speeds ~1.5x apart from one such slot to the next spreads block
log-ratios by 16-20 %. Here one run of the module (``kbench.kinds.kfunc.ab``,
/sys/kernel/kbench/ab/) holds hundreds of blocks of ~25 us slots, so a speed switch
lands inside few blocks and hits both sides of those alike.

Protocol:
1. A pilot run, neither judged nor stored, fixes the batch and the samples of a slot
   (``KernelSlots.pilot``). A side whose single call does not fit a slot sends the
   comparison back to the outside design; a side whose set-up fails ends it with an
   error naming that side.
2. Runs of the module of at most ``RUN_BLOCKS`` blocks each (and of ``max_blocks / 5``),
   each with its sides set up afresh and a fresh random seed for the blocks' orders. As
   each fifth of the blocks or of the budget is reached, the primary metric of every new
   side is looked at as in the outside design (looks share alpha, ``kbench.compare.
   spending``), and the comparison stops once every new side is decided, after
   ``max_blocks`` judged blocks (``DEFAULT_MAX_BLOCKS``), or when the next run would
   end after the time budget.
3. A slot's value is the interquartile mean of its samples' cycles per call, leaving out
   the samples an interrupt or a context switch reached (the module flags them). A slot
   left with none drops its block, and so does the incomplete last block of an
   interrupted run: their samples are stored with block -1 and are not judged.
4. One stored run per side, as the outside design stores them (columns ``ticks``,
   ``disturbed`` - the module's flags -, ``slot``, ``block``; the header's
   ``interleaved`` entry, with ``in_kernel`` describing the runs).

``interleaved_comparison`` picks this design where the sides allow it, else
``run_interleaved``.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from kbench.compare.slot import CPU, interquartile_means
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.contract.request import BadRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.interleaved import (
    DEFAULT_BUDGET_S,
    LOOK_FRACTIONS,
    InterleavedOutcome,
    InterleavedSide,
    SequentialLooks,
    Slot,
    SlotCallback,
    _Runner,
    check_comparison,
    metrics_of,
    run_interleaved,
)
from kbench.kinds.kfunc.ab import KernelSlots, SlotPlan, SlotsTooLong
from kbench.kinds.registry import kernel_slots
from kbench.store.db import Store
from kbench.targets.base import Target
from kbench.targets.kmod_ab import AbRun

RUN_BLOCKS = 20
"""Blocks in one run of the module at most. Each run sets its sides up afresh, and a run can carry
a state of its own: comparing 98 against 100 steps, one run in 10 to 20 put the pair 1-3 % further
apart than the rest did (equal sides never moved). In runs of 20 blocks such a run is a twentieth
of a 400-block look, not a fifth, and the blocks' median does not follow it (docs/PERFORMANCE.md,
"Runs of the module"). A run costs about 30 ms under TCG."""
COUNTER_RUN_S = 0.5
"""How long the plain run that counts a side lasts (about), after the blocks (``--counters``)."""
COUNTER_RUN_SAMPLES = (1000, 1_000_000)
DEFAULT_MAX_BLOCKS = 2000
"""Judged blocks of a comparison unless --blocks says otherwise. A 1 % difference shows after a few
hundred blocks under TCG, and the signed-rank interval's Walsh averages grow as blocks^2 / 2."""
MAX_BLOCKS = 4000
"""The most blocks a comparison inside kbench.ko takes (8 million Walsh averages)."""


def interleaved_comparison(
    store: Store,
    sides: list[ComparisonSide],
    target: Target,
    *,
    budget_s: float = DEFAULT_BUDGET_S,
    max_blocks: int | None = None,
    metric: str = CPU,
    alpha: float = DEFAULT_ALPHA,
    margin: float | None = None,
    margin_from_noise: bool = False,
    seed: int = 0,
    samples: int | None = None,
    adaptive: bool = True,
    on_slot: SlotCallback | None = None,
    tags: Sequence[str] = (),
    in_kernel: bool = True,
    clock: Callable[[], float] = time.monotonic,
) -> InterleavedOutcome:
    """The interleaved design for ``sides`` on ``target``: inside kbench.ko when every side is an
    in-kernel benchmark that can share one thread (and ``in_kernel``), else slot by slot from
    outside (``run_interleaved``, which takes the same options)."""
    kernel = kernel_slots(target, [(s.benchmark, s.request) for s in sides]) if in_kernel else None
    if kernel is not None:
        with kernel.opened() as opened:
            if opened is not None:
                try:
                    return run_in_kernel(store, sides, target, opened, budget_s=budget_s, max_blocks=max_blocks,
                                         alpha=alpha, margin=margin, margin_from_noise=margin_from_noise, seed=seed,
                                         samples=samples, adaptive=adaptive, on_slot=on_slot, tags=tags,
                                         clock=clock)
                except SlotsTooLong:
                    pass  # a call too long for a slot inside the module: whole runs as slots
    return run_interleaved(store, sides, target, budget_s=budget_s, max_blocks=max_blocks, metric=metric,
                           alpha=alpha, margin=margin, margin_from_noise=margin_from_noise, seed=seed,
                           samples=samples, adaptive=adaptive, on_slot=on_slot, tags=tags, clock=clock)


def run_in_kernel(
    store: Store,
    sides: list[ComparisonSide],
    target: Target,
    kernel: KernelSlots,
    *,
    budget_s: float = DEFAULT_BUDGET_S,
    max_blocks: int | None = None,
    alpha: float = DEFAULT_ALPHA,
    margin: float | None = None,
    margin_from_noise: bool = False,
    seed: int = 0,
    samples: int | None = None,
    adaptive: bool = True,
    on_slot: SlotCallback | None = None,
    tags: Sequence[str] = (),
    clock: Callable[[], float] = time.monotonic,
) -> InterleavedOutcome:
    """The design of the module docstring, with ``kernel`` (``KernelSlots.opened``) holding the module.

    ``samples``: samples per slot (default: from the pilot). SlotsTooLong (from the pilot,
    before anything is stored) when a call does not fit a slot."""
    check_comparison(sides, budget_s)
    total = max_blocks or DEFAULT_MAX_BLOCKS
    if total > MAX_BLOCKS:
        raise BadRequest(f"--blocks {total}: a comparison inside kbench.ko judges at most {MAX_BLOCKS} blocks")
    metrics = metrics_of(sides[0].benchmark, CPU)
    primary = metrics[0]
    rng = np.random.default_rng(seed)
    k = len(sides)
    started = clock()
    plan = kernel.pilot(samples, _order_seed(rng))
    runner = _Runner(store, [_stored_side(side, plan.batch) for side in sides], target, samples, tags)
    sysinfo = target.sysinfo()
    comparison_id = uuid.uuid4().hex[:12]
    looks = SequentialLooks(sides, primary, alpha=alpha, margin=margin, margin_from_noise=margin_from_noise,
                            adaptive=adaptive)
    slot_text = plan.describe()
    design: dict[str, Any] = {"design": "interleaved", "comparison": comparison_id, "seed": seed,
                              "sides": [s.label for s in sides], "metric": primary.name, "slot": slot_text}
    tally = _Tally()
    slots: list[Slot] = []
    runner.begin(sysinfo)
    try:
        per_run = min(math.ceil(total / len(LOOK_FRACTIONS)), RUN_BLOCKS)
        measuring_started = clock()
        blocks = 0
        while True:
            elapsed = clock() - measuring_started
            count = min(per_run, total - blocks)
            if tally.measured_blocks and elapsed > 0:
                count = max(1, min(count, math.ceil((budget_s - elapsed) * tally.measured_blocks / elapsed)))
            run = kernel.run(count, _order_seed(rng))
            judged = tally.keep(run, runner, kernel, slots, primary.name, first_block=blocks)
            blocks += judged
            if on_slot is not None:
                on_slot(sides[-1].label, blocks, min(1.0, (clock() - measuring_started) / budget_s))
            if run.interrupted:
                raise KeyboardInterrupt
            elapsed = clock() - measuring_started
            fraction = max(elapsed / budget_s, blocks / total)
            if elapsed + elapsed / tally.runs > budget_s or tally.measured_blocks >= 2 * total:
                fraction = 1.0  # the next run would end after the budget (or nothing is left to judge)
            so_far = InterleavedOutcome(runner.sides, metrics, slots, blocks, looks.comparisons, "", 0.0, budget_s,
                                        slot_text, "", comparison_id)
            if looks.look(fraction, so_far):
                break
    except KeyboardInterrupt:
        runner.finish(sysinfo, {**design, "in_kernel": tally.describe(plan.batch, plan.slot_samples)},
                      status="interrupted")
        raise
    except BaseException as exc:
        runner.finish(sysinfo, design, status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    elapsed = clock() - started
    stopping = (f"alpha spending over looks at {', '.join(f'{f:.0%}' for f in LOOK_FRACTIONS)} of "
                f"{total} blocks or of the budget ({looks.taken()} taken)" if adaptive else "one look at the end")
    design_text = (
        f"interleaved inside kbench.ko: randomized mirrored blocks (ABBA/BAAB) in one kernel thread, {blocks} blocks "
        f"of {2 * k} slots in {tally.runs} run{'s' if tally.runs != 1 else ''} of the module, a slot = {slot_text}; "
        f"{primary.name} per slot as the "
        f"interquartile mean of its samples that no interrupt or context switch reached "
        f"({tally.disturbed_samples} of {tally.samples} samples left out, {tally.dropped_blocks} blocks dropped), "
        f"per block as log(new/base), Wilcoxon signed-rank test and interval; {stopping}")
    if any(side.request.counters for side in sides):
        _count_apart(runner, sides, target, plan)
        design_text += ("; --counters: each side counted in a kbench.ko run of its own after the blocks, "
                        "stored with its run, not judged")
    design.update(blocks=blocks, description=design_text, in_kernel=tally.describe(plan.batch, plan.slot_samples))
    runner.finish(sysinfo, design)
    return InterleavedOutcome(runner.sides, metrics, slots, blocks, looks.comparisons, design_text, elapsed,
                              budget_s, slot_text, "", comparison_id, ns_per_unit={primary.name: 1e6 / kernel.tsc_khz},
                              run_blocks=tuple(tally.run_blocks))


def _count_apart(runner: _Runner, sides: list[ComparisonSide], target: Target, plan: SlotPlan) -> None:
    """``--counters``: each side counted in a plain kbench.ko run of its own after the blocks (perf
    events around its recorded loop, ``COUNTER_RUN_S`` long), not in the A/B slots: enabling a
    side's events around each of its slots was measured to cost about as much as a slot
    (docs/profiles.md), so its counts per call would be mostly the counting's own. The counts
    are stored with the side's run (its ``operations``: that run's calls) and not judged."""
    from kbench.kinds.registry import measure

    sample_s = max(plan.slot_s / max(plan.slot_samples, 1), 1e-9)
    low, high = COUNTER_RUN_SAMPLES
    samples = int(min(high, max(low, COUNTER_RUN_S / sample_s)))
    for keep, side in zip(runner.sides, sides, strict=True):
        request = replace(side.request, counters=True, samples=samples, duration_s=None, batch=plan.batch)
        counted = measure(target, side.benchmark, request)
        raw = counted.header.get("counters")
        if not raw:
            keep.warnings.append("--counters: kbench.ko did not count this side: "
                                 + "; ".join(counted.header.get("warnings", [])))
            continue
        keep.counter_readings.append({**raw, "operations": counted.n * plan.batch})
        keep.warnings.append(f"--counters: counted in a kbench.ko run of its own after the blocks ({counted.n} "
                             f"samples of batch {plan.batch}), not in the A/B slots (enabling the events around "
                             "every slot would cost about a slot); shown with the run, not judged")


def _order_seed(rng: np.random.Generator) -> int:
    return int(rng.integers(1, 2**63))


def _stored_side(side: ComparisonSide, batch: int) -> ComparisonSide:
    """The request a side's stored run records: the batch every slot used, no sample count."""
    return replace(side, request=replace(side.request, batch=batch, samples=None, duration_s=None))


class _Tally:
    """What the runs of the module measured so far, and the bookkeeping of slots and blocks."""

    def __init__(self) -> None:
        self.slots = 0
        self.samples = 0
        self.disturbed_samples = 0
        self.disturbed_slots = 0
        self.run_blocks: list[int] = []  # judged blocks of each run of the module, in order
        self.dropped_blocks = 0
        self.measured_blocks = 0
        self.tsc_khz = 0

    @property
    def runs(self) -> int:
        return len(self.run_blocks)

    def describe(self, batch: int, slot_samples: int) -> dict[str, int | list[int]]:
        return {"runs": self.runs, "run_blocks": list(self.run_blocks), "batch": batch, "slot_samples": slot_samples,
                "slots": self.slots,
                "samples": self.samples, "disturbed_samples": self.disturbed_samples,
                "disturbed_slots": self.disturbed_slots, "dropped_blocks": self.dropped_blocks,
                "tsc_khz": self.tsc_khz}

    def keep(self, run: AbRun, runner: _Runner, kernel: KernelSlots, slots: list[Slot], metric: str,
             first_block: int) -> int:
        """Store the run's samples with their sides, add its judged slots to ``slots`` (blocks
        numbered from ``first_block``); returns how many blocks it adds."""
        k = len(runner.sides)
        per_slot = run.settings.slot_samples
        records = run.records
        count = records.size // per_slot
        records = records[: count * per_slot]
        cycles = records["cycles"].reshape(count, per_slot).astype(np.float64)
        clean = records["flags"].reshape(count, per_slot) == 0
        values = interquartile_means(cycles / run.settings.batch, clean)
        side_of = records["side"][::per_slot].astype(np.int64)
        complete = count // (2 * k)
        in_block = np.arange(count) // (2 * k)
        judged = np.zeros(count // (2 * k) + 1, dtype=bool)
        for block in range(complete):
            judged[block] = bool(np.all(np.isfinite(values[block * 2 * k:(block + 1) * 2 * k])))
        numbers = np.cumsum(judged) - 1 + first_block
        slot_block = np.where(judged[in_block], numbers[in_block], -1)
        slot_numbers = np.arange(count) + self.slots
        hz = run.tsc_khz * 1000.0
        for index in range(count):
            if slot_block[index] >= 0:
                slots.append(Slot(int(side_of[index]), int(slot_block[index]), int(slot_numbers[index]),
                                  {metric: float(values[index])}, float(cycles[index].sum()) / hz))
        sample_side = records["side"].astype(np.int64)
        for side in range(k):
            rows = sample_side == side
            keep = runner.sides[side]
            _append(keep, "ticks", records["cycles"][rows].astype(np.uint64))
            _append(keep, "disturbed", records["flags"][rows].astype(np.int64))
            _append(keep, "slot", np.repeat(slot_numbers, per_slot)[rows])
            _append(keep, "block", np.repeat(slot_block, per_slot)[rows])
            if keep.header is None:
                keep.header = kernel.header(run, side)
        added = int(judged[:complete].sum())
        self.run_blocks.append(added)
        self.slots += count
        self.samples += int(records.size)
        self.disturbed_samples += int(np.count_nonzero(~clean))
        self.disturbed_slots += int(np.count_nonzero((~clean).any(axis=1)))
        self.dropped_blocks += (complete - added) + (1 if count % (2 * k) else 0)
        self.measured_blocks += complete
        self.tsc_khz = run.tsc_khz
        return added


def _append(side: InterleavedSide, column: str, values: np.ndarray) -> None:
    side.columns.setdefault(column, []).append(values)
