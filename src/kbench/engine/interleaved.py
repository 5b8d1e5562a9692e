"""The interleaved design: sides alternate one short slot at a time, in mirrored random blocks.

For commands, syscalls and in-kernel functions whose sides run on one target (this
kernel, or one booted kernel with sides that differ by parameters), the finest grain
wins: a *slot* is one short measurement of one side (a few executions of a command,
a short probe run, one short kbench.ko run), and a *block* runs every side twice in a
mirrored random order (ABBA / BAAB, ``kbench.engine.interleave``). The machine's drift
and its switches of speed then hit the sides alike, and each block gives one paired
log-ratio per new side (``kbench.compare.paired``).

Protocol:
1. A pilot block (not judged): warms caches and the page cache, fixes what must stay
   the same in every slot (the probe's batch, one for every side; a command's executions per slot, chosen
   so that a slot lasts about ``SLOT_TARGET_S``), and times a block.
2. Blocks until the time budget is spent (or ``max_blocks``). The probe's workloads
   (not ``command``) run many blocks of 2 ms slots to one probe process
   (``kbench-probe sequence``): this machine's speed switches within tens of
   milliseconds, so the finer the slots the fewer blocks straddle a switch, and one
   process start serves about ``PROCESS_TARGET_S`` of slots. The primary metric of
   each new side is looked at when 20, 40, 60, 80 and 100% of the budget have passed;
   looks share alpha (``kbench.compare.spending``), and the comparison stops once
   every new side is decided.
3. One stored run per side holds every judged slot's raw samples in order, with the
   columns ``slot`` (index in the whole schedule) and ``block``; the header's
   ``interleaved`` entry describes the design and names the comparison.

Interrupted (Ctrl-C) or failed: every side's run is stored with what was measured, and
the exception goes on.
"""

from __future__ import annotations

import contextlib
import math
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from kbench.compare.paired import PairedSequential
from kbench.compare.slot import CPU
from kbench.compare.thresholds import DEFAULT_ALPHA, PAIRED_MIN_BLOCKS
from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import BadRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.compare_spec import DEFAULT_BUDGET_S as DEFAULT_BUDGET_S
from kbench.engine.interleave import mirrored_order
from kbench.engine.interleaved_outcome import INTERLEAVED_DESIGN as INTERLEAVED_DESIGN
from kbench.engine.interleaved_outcome import InterleavedOutcome as InterleavedOutcome
from kbench.engine.interleaved_outcome import InterleavedSide as InterleavedSide
from kbench.engine.interleaved_outcome import MetricInfo as MetricInfo
from kbench.engine.interleaved_outcome import Slot as Slot
from kbench.engine.interleaved_outcome import metrics_of as metrics_of
from kbench.engine.interleaved_outcome import slot_values as slot_values
from kbench.engine.runner import begin_stored_run, finish_stored_run
from kbench.kinds.registry import kind_of, measure_sequence, runs_in_one_process
from kbench.kinds.registry import measure as measure_on
from kbench.profile.counters import Counters, counter_metric_values, parse_counters, sum_raw
from kbench.store.db import Store
from kbench.targets.base import ExecutionFailed, Target

SLOT_TARGET_S = 0.1
"""A command slot runs enough executions to last about this long (at least one): short
enough that drift within a block stays small, long enough that starting the probe
(about 20 ms) is a small part of it."""
MAX_EXECUTIONS_PER_SLOT = 1000
PROBE_SLOT_S = 0.002
"""Measured time of a probe slot (duration mode) unless --samples is given. Short: this
machine's speed switches between modes within tens of milliseconds, and 2 ms slots
alternating in one process put most switches outside a block (benchmarks/sensitivity.py:
A/A block log-ratios spread 0.7-1.7 % with 2 ms slots against 3.3-3.6 % with 50 ms)."""
PROCESS_TARGET_S = 0.5
"""Blocks of the probe's workloads run this long in one probe process (one start and one
TSC calibration for all of them), at most ``MAX_RUNS_PER_PROCESS`` slots."""
MAX_RUNS_PER_PROCESS = 1024
"""kbench-probe's limit of runs in one ``sequence``."""
KFUNC_SLOT_SAMPLES = 2000
"""Samples of a kbench.ko slot unless --samples is given."""
PILOT_SLOWDOWN = 1.5
"""How much slower than a judged slot a pilot slot is taken to be when the pilot judges a budget."""
SLOT_OVERHEAD_PAIRS = 1000
"""Empty timed regions a probe slot measures (its header's overhead; the default 100,000
would take longer than a 2 ms slot)."""
LOOK_FRACTIONS = (0.2, 0.4, 0.6, 0.8, 1.0)
"""Looks at these fractions of the time budget (the last one spends what is left)."""
_NO_COUNTERS = Counters("none", "none", ())

SlotCallback = Callable[[str, int, float], None]  # side label, judged blocks so far, fraction of budget used

METRIC_REASONS = {
    "cpu": ("CPU time (user + system, from wait4) is what the program itself costs; on a shared "
            "machine its wall time also holds the time it waited for a CPU"),
    "wall": "wall time, as asked (--metric wall): it includes waiting for a CPU, I/O and sleeping",
}


def supports_interleaving(sides: Sequence[ComparisonSide]) -> str | None:
    """None when the sides can be interleaved slot by slot, else why not."""
    if len({side.kernel or "local" for side in sides}) != 1:
        return "the sides run in different kernels: each needs its own boot, so trials are the unit"
    if any(kind_of(side.benchmark).sample_unit is None for side in sides):
        return f"{sides[0].benchmark.name} is a whole-tool or scalability benchmark: its runs are the unit"
    return None


def check_comparison(sides: Sequence[ComparisonSide], budget_s: float) -> None:
    """Refuse sides that cannot make an interleaved comparison (ValueError for fewer than two),
    and a budget that is not positive (BadRequest)."""
    if len(sides) < 2:
        raise ValueError("a comparison needs at least two sides")
    why_not = supports_interleaving(sides)
    if why_not is not None:
        raise BadRequest(f"these sides cannot be interleaved: {why_not}")
    if not budget_s > 0:
        raise BadRequest(f"the time budget must be positive, got {budget_s}")


class SequentialLooks:
    """The sequential comparison of each new side against the first (by label), looked at as the
    spent fraction (of the budget, or of the blocks) reaches each of ``LOOK_FRACTIONS``."""

    def __init__(self, sides: Sequence[ComparisonSide], primary: MetricInfo, *, alpha: float, margin: float | None,
                 margin_from_noise: bool, adaptive: bool) -> None:
        self.comparisons = {
            side.label: PairedSequential(direction=primary.direction, alpha=alpha, margin=margin, metric=primary.name,
                                         unit=primary.unit, margin_from_noise=margin_from_noise)
            for side in sides[1:]
        }
        self.metric = primary.name
        self.adaptive = adaptive
        self._next = 0

    def look(self, fraction: float, so_far: InterleavedOutcome) -> bool:
        """Look at every undecided new side of ``so_far`` once ``fraction`` reaches the next look
        (with ``adaptive`` off, only at 1.0, which spends what is left); looks it passed by are
        skipped. True when the comparison stops: at 1.0 or once every new side is decided."""
        if fraction < LOOK_FRACTIONS[self._next]:
            return False
        while self._next < len(LOOK_FRACTIONS) - 1 and fraction >= LOOK_FRACTIONS[self._next + 1]:
            self._next += 1
        self._next += 1
        final = fraction >= 1.0
        if self.adaptive or final:
            for new, side in enumerate(so_far.sides[1:], start=1):
                comparison = self.comparisons[side.label]
                if not comparison.done:
                    comparison.look(so_far.log_ratios(new, self.metric), so_far.side_values(0, self.metric),
                                    so_far.side_values(new, self.metric), 1.0 if final else fraction)
        return final or all(c.done for c in self.comparisons.values())

    def taken(self) -> int:
        """The most looks any new side's comparison took."""
        return max(len(c.boundary.looks) for c in self.comparisons.values())


def counter_metrics(benchmark: Benchmark, measurements: Sequence[Measurement]) -> list[MetricInfo]:
    """The counter metrics every one of ``measurements`` (the pilot's slots) has, in their order."""
    found: list[dict[str, tuple[float, str, str]]] = [
        counter_metric_values(m.header, benchmark.metric) for m in measurements]
    if not found:
        return []
    common = [name for name in found[0] if all(name in other for other in found[1:])]
    return [MetricInfo(name, found[0][name][1], found[0][name][2]) for name in common]


class _Runner:
    """Measures slots of the sides on one target and keeps their raw samples."""

    def __init__(
        self, store: Store, sides: list[ComparisonSide], target: Target, samples: int | None, tags: Sequence[str]
    ):
        self.store = store
        self.target = target
        self.samples = samples
        self.tags = tuple(tags)
        self.sides = [InterleavedSide(side) for side in sides]
        self.requests = [side.request for side in sides]
        self.one_process = runs_in_one_process(target, [side.benchmark for side in sides])

    def fix_slot_requests(self, pilot: list[tuple[Measurement, float]]) -> str:
        """After the pilot: the same batch / executions in every slot; returns the slot's description.

        Sides that batch operations get one batch, the largest the pilot chose for any of them:
        a per-operation value holds the sample's fixed costs (timer, loop) divided by the
        batch, so sides with different batches would differ by that alone. The largest keeps
        every side's sample above the size its auto batch aimed at."""
        batches = [int(m.header.get("batch") or 1) for (m, _), s in zip(pilot, self.sides, strict=True)
                   if s.side.benchmark.name != "command"]
        common_batch = max(batches, default=1)
        texts = []
        for index, (measurement, seconds) in enumerate(pilot):
            side = self.sides[index].side
            request = self.requests[index]
            if side.benchmark.name == "command":
                if self.samples is None:
                    per_execution = max(seconds / max(measurement.n, 1), 1e-6)
                    executions = min(MAX_EXECUTIONS_PER_SLOT, max(1, round(SLOT_TARGET_S / per_execution)))
                    request = replace(request, samples=executions)
                texts.append(f"{request.samples} execution{'s' if request.samples != 1 else ''}")
            else:
                request = replace(request, batch=request.batch or common_batch)
                size = (f"{request.samples} samples" if request.duration_s is None
                        else f"{request.duration_s:g} s of samples")
                texts.append(f"{size} of batch {request.batch}")
            self.requests[index] = request
        distinct = list(dict.fromkeys(texts))
        if len(distinct) == 1:
            return distinct[0]
        return "; ".join(f"{s.label}: {t}" for s, t in zip(self.sides, texts, strict=True))

    def measure(self, index: int) -> tuple[Measurement, float]:
        started = time.monotonic()
        try:
            measurement = measure_on(self.target, self.sides[index].side.benchmark, self.requests[index])
        except ExecutionFailed as exc:
            raise exc.on_side(self.sides[index].label) from exc
        if measurement.interrupted:
            self.sides[index].interrupted = True
            raise KeyboardInterrupt
        return measurement, time.monotonic() - started

    def measure_blocks(self, orders: Sequence[Sequence[int]]) -> Iterator[tuple[int, int, Measurement, float]]:
        """(block of ``orders``, side, measurement, seconds) of each slot, in order: all in one
        process when the sides allow it (each slot's seconds are then its share), else one
        process per slot. KeyboardInterrupt after the slots finished before an interruption."""
        if not self.one_process:
            for offset, order in enumerate(orders):
                for index in order:
                    measurement, seconds = self.measure(index)
                    yield offset, index, measurement, seconds
            return
        slots = [(offset, index) for offset, order in enumerate(orders) for index in order]
        started = time.monotonic()
        try:
            measurements = measure_sequence(
                self.target, [(self.sides[index].side.benchmark, self.requests[index]) for _, index in slots])
        except ExecutionFailed as exc:
            raise exc.on_side(self.sides[slots[min(exc.record, len(slots) - 1)][1]].label) from exc
        seconds = (time.monotonic() - started) / len(slots)
        for (offset, index), measurement in zip(slots, measurements, strict=False):
            if measurement.interrupted:
                self.sides[index].interrupted = True
                raise KeyboardInterrupt
            yield offset, index, measurement, seconds
        if len(measurements) < len(slots):
            raise KeyboardInterrupt

    def blocks_per_process(self, pilot: list[tuple[Measurement, float]]) -> int:
        """Blocks measured in one process: about ``PROCESS_TARGET_S`` of slots (1 without sequences)."""
        if not self.one_process:
            return 1
        slot_s = max(max(float(m.header.get("elapsed_s") or 0.0) for m, _ in pilot), 1e-4)
        slots_per_block = 2 * len(self.sides)
        fits = round(PROCESS_TARGET_S / (slots_per_block * slot_s))
        return max(1, min(fits, MAX_RUNS_PER_PROCESS // slots_per_block))

    def keep(self, index: int, measurement: Measurement, slot: int, block: int) -> None:
        side = self.sides[index]
        for name, values in measurement.columns.items():
            side.columns.setdefault(name, []).append(values)
        rows = measurement.n
        side.columns.setdefault("slot", []).append(np.full(rows, slot, dtype=np.int64))
        side.columns.setdefault("block", []).append(np.full(rows, block, dtype=np.int64))
        if side.header is None:
            side.header = dict(measurement.header)
        failure = measurement.header.get("failure") or {}
        for count in ("count", "before"):
            side.failure[count] += int(failure.get(count) or 0)
        if failure.get("last"):
            side.failure["last"] = failure["last"]
        raw = measurement.header.get("counters")
        if raw:
            side.counter_readings.append(raw)
            side.counter_slots.append({"slot": slot, "block": block, "metrics": {
                figure: value for figure, (value, _, _) in
                (parse_counters(measurement.header) or _NO_COUNTERS).metric_values().items()}})
        side.warnings.extend(w for w in measurement.header.get("warnings", []) if w not in side.warnings)

    @property
    def begun(self) -> bool:
        """Whether the sides' runs are stored (``begin``)."""
        return any(side.started is not None for side in self.sides)

    def begin(self, sysinfo: dict[str, Any]) -> None:
        info = self.target.info()
        for side, request in zip(self.sides, self.requests, strict=True):
            request = replace(request, tags=(*request.tags, *self.tags, f"side:{side.label}"))
            side.started = begin_stored_run(self.store, side.side.benchmark, request, info, sysinfo)
            side.run_id = side.started.run_id

    def finish(self, sysinfo: dict[str, Any], design: dict[str, Any], status: str | None = None,
               error: str | None = None) -> None:
        for side, request in zip(self.sides, self.requests, strict=True):
            if side.started is None:
                continue
            if status == "failed":
                self.store.finish_run(side.run_id, status="failed", error=error)
                continue
            columns = {name: np.concatenate(parts) for name, parts in side.columns.items()}
            header = dict(side.header or {})
            header.update(n=int(next(iter(columns.values())).size) if columns else 0,
                          columns=[c for c in columns if c not in ("slot", "block")],
                          warnings=side.warnings,
                          interleaved={**design, "side": side.label,
                                       "slots": int(np.unique(columns["slot"]).size) if columns else 0})
            interrupted = status == "interrupted" or side.interrupted
            header["interrupted"] = interrupted
            header["failure"] = {**side.failure, "ignored": request.ignore_failure}
            header.pop("counters", None)  # the first slot's: the side's are the sum of all its slots
            counters = sum_raw(side.counter_readings)
            if counters is not None:
                header["counters"] = {**counters, "slots": side.counter_slots}
            measurement = Measurement(header=header, columns=columns, interrupted=interrupted, stderr="")
            finish_stored_run(self.store, side.started, side.side.benchmark, request, measurement, sysinfo)


def _slot_request(side: ComparisonSide, samples: int | None) -> ComparisonSide:
    request = side.request
    if side.benchmark.name == "command":
        request = replace(request, samples=samples or 1, warmup_samples=0, timer="clock", overhead_pairs=1000)
    elif kind_of(side.benchmark).in_kernel:
        request = replace(request, samples=samples or KFUNC_SLOT_SAMPLES, duration_s=None)
    elif samples is not None:
        request = replace(request, samples=samples, duration_s=None, overhead_pairs=SLOT_OVERHEAD_PAIRS)
    else:
        request = replace(request, samples=None, duration_s=PROBE_SLOT_S, overhead_pairs=SLOT_OVERHEAD_PAIRS)
    return replace(side, request=request)


def run_interleaved(
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
    clock: Callable[[], float] = time.monotonic,
) -> InterleavedOutcome:
    """Run the interleaved design of the module docstring on ``target`` (all sides run there).

    ``margin``: the equivalence margin; with None and ``margin_from_noise``, each new side's
    comparison measures its own from its blocks (``kbench.compare.noise_margin``)."""
    check_comparison(sides, budget_s)
    benchmark = sides[0].benchmark
    metrics = metrics_of(benchmark, metric)
    primary = metrics[0]
    rng = np.random.default_rng(seed)
    runner = _Runner(store, [_slot_request(side, samples) for side in sides], target, samples, tags)
    sysinfo = target.sysinfo()
    comparison_id = uuid.uuid4().hex[:12]
    looks = SequentialLooks(sides, primary, alpha=alpha, margin=margin, margin_from_noise=margin_from_noise,
                            adaptive=adaptive)
    k = len(sides)
    slots: list[Slot] = []
    design: dict[str, Any] = {"design": "interleaved", "comparison": comparison_id, "seed": seed,
                              "sides": [s.label for s in sides], "metric": primary.name}
    started = clock()
    try:
        pilot: list[tuple[Measurement, float]] = [(Measurement({}, {}, False, ""), 0.0)] * k
        for _, index, measurement, seconds in runner.measure_blocks([mirrored_order(rng, k)]):
            pilot[index] = (measurement, seconds)
        slot_text = runner.fix_slot_requests(pilot)
        metrics.extend(counter_metrics(benchmark, [m for m, _ in pilot]))
        per_process = runner.blocks_per_process(pilot)
        design["slot"] = slot_text
        measuring_started = clock()
        # a budget refused is bad input: refused before the sides' runs are stored (the pilot keeps no sample)
        _check_budget(budget_s, max_blocks, measuring_started - started, pilot, runner)
        runner.begin(sysinfo)
        blocks, slot_index = 0, 0
        while True:
            count = _blocks_next(per_process, blocks, clock() - measuring_started, budget_s, max_blocks)
            for offset, index, measurement, seconds in runner.measure_blocks(
                    [mirrored_order(rng, k) for _ in range(count)]):
                runner.keep(index, measurement, slot_index, blocks + offset)
                slots.append(Slot(index, blocks + offset, slot_index,
                                  slot_values(runner.sides[index].side.benchmark, measurement), seconds))
                slot_index += 1
                if on_slot is not None:
                    on_slot(sides[index].label, blocks + offset, min(1.0, (clock() - measuring_started) / budget_s))
            blocks += count
            elapsed = clock() - measuring_started
            fraction = elapsed / budget_s
            if elapsed + elapsed / blocks > budget_s:
                fraction = 1.0  # the next block would end after the budget: this is the last look
            if max_blocks is not None:
                fraction = max(fraction, blocks / max_blocks)
            so_far = InterleavedOutcome(runner.sides, metrics, slots, blocks, looks.comparisons, "", 0.0, budget_s,
                                        slot_text, "", comparison_id)
            if looks.look(fraction, so_far):
                break
    except KeyboardInterrupt:
        runner.finish(sysinfo, design, status="interrupted")
        raise
    except BaseException as exc:
        if not runner.begun and not isinstance(exc, BadRequest):  # the pilot failed: stored as the failure it is
            with contextlib.suppress(Exception):  # what failed is what the user is told, not this
                runner.begin(sysinfo)
        runner.finish(sysinfo, design, status="failed", error=f"{type(exc).__name__}: {exc}")
        raise
    elapsed = clock() - started
    stopping = (f"alpha spending over looks at {', '.join(f'{f:.0%}' for f in LOOK_FRACTIONS)} of the budget "
                f"({looks.taken()} taken)" if adaptive else "one look at the end of the budget")
    process = f", up to {per_process} blocks in one probe process" if runner.one_process else ""
    design_text = (f"interleaved: randomized mirrored blocks (ABBA/BAAB), {blocks} blocks of {2 * k} slots{process}, "
                   f"a slot = {slot_text}; {primary.name} per block as log(new/base), Wilcoxon signed-rank "
                   f"test and interval; {stopping}")
    design.update(blocks=blocks, description=design_text,
                  blocks_per_process=per_process if runner.one_process else None)
    runner.finish(sysinfo, design)
    reason = METRIC_REASONS.get(metric, "") if benchmark.name == "command" else ""
    return InterleavedOutcome(runner.sides, metrics, slots, blocks, looks.comparisons, design_text, elapsed,
                              budget_s, slot_text, reason, comparison_id, ns_per_unit=_ns_per_cycle(primary, runner))


def _ns_per_cycle(primary: MetricInfo, runner: _Runner) -> dict[str, float]:
    """{metric: ns per cycle} for a metric counted in cycles (the TSC rate its runs recorded)."""
    hz = float(((runner.sides[0].header or {}).get("timer") or {}).get("hz") or 0)
    return {primary.name: 1e9 / hz} if primary.unit == "cycles" and hz > 0 else {}


def _blocks_next(per_process: int, blocks: int, elapsed: float, budget_s: float, max_blocks: int | None) -> int:
    """How many blocks the next process measures: ``per_process``, fewer where the budget or
    ``max_blocks`` ends sooner (at least one)."""
    count = per_process
    if blocks > 0 and elapsed > 0:
        count = min(count, math.ceil((budget_s - elapsed) / (elapsed / blocks)))
    if max_blocks is not None:
        count = min(count, max_blocks - blocks)
    return max(1, count)


def least_command_budget_s() -> float:
    """The least budget a side-by-side comparison of two commands fits, whatever they run: a
    verdict needs ``PAIRED_MIN_BLOCKS`` blocks, a block two slots per side, and a command slot
    runs executions for about ``SLOT_TARGET_S`` (judged as ``_check_budget`` judges a pilot).
    Commands checked against it before anything runs (``kbench watch --budget``) are refused
    then, not after hours of measuring; a longer execution needs more (said at the comparison)."""
    return PAIRED_MIN_BLOCKS * 2 * 2 * SLOT_TARGET_S / PILOT_SLOWDOWN


def _check_budget(budget_s: float, max_blocks: int | None, pilot_s: float,
                  pilot: list[tuple[Measurement, float]], runner: _Runner) -> None:
    """Refuse a budget that cannot fit the blocks a decision needs (judged from the pilot block)."""
    # the pilot ran one slot per side with the pilot's sizes; a judged block runs two per side, but
    # the pilot's first executions are slow (cold caches, first start of the probe), hence the discount
    per_block = 2.0 * pilot_s * _rescale(pilot, runner) / PILOT_SLOWDOWN
    fits = math.floor(budget_s / per_block) if per_block > 0 else PAIRED_MIN_BLOCKS
    if max_blocks is not None:
        fits = min(fits, max_blocks)
    if fits < PAIRED_MIN_BLOCKS:
        needed = math.ceil((PAIRED_MIN_BLOCKS + 1) * per_block)
        raise BadRequest(
            f"a budget of {budget_s:g} s fits about {fits} blocks here ({per_block:.2f} s each); a verdict needs at "
            f"least {PAIRED_MIN_BLOCKS}: give --budget {needed} or more"
        )


def _rescale(pilot: list[tuple[Measurement, float]], runner: _Runner) -> float:
    """How much longer a judged slot is than the pilot's (commands may run several executions per slot)."""
    ratios = []
    for (measurement, _), request, side in zip(pilot, runner.requests, runner.sides, strict=True):
        if side.side.benchmark.name == "command" and measurement.n:
            ratios.append((request.samples or 1) / measurement.n)
    return max(ratios) if ratios else 1.0
