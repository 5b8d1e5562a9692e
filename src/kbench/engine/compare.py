"""``compare(spec)``: the comparison a ``ComparisonSpec`` asks for, measured (or read from stored runs).

The design follows from the spec (``designs`` names it without measuring anything):

- ``--runs``: stored runs, each side's runs as they were measured: ``STORED_INTERLEAVED``
  (the runs of an interleaved comparison, replayed block by block), ``STORED_COPIES`` (the
  runs of a comparison of module copies) or ``STORED_TRIALS`` (each run one trial);
- ``--module``: the user's modules loaded in one kernel, alternated in one kernel thread
  (``MODULES``) or, with copies, judged on their copies (``MODULE_COPIES``);
- ``--kernel``, ``--command`` or a parameter varied with '|': ``INTERLEAVED`` where every side
  runs on one target and a slot is cheap, else ``TRIALS`` (``comparison_sides.choose_design``);
- ``--metric instructions``: counted instead of timed (``COUNTS``), alone or before a time's
  design (``instructions,cpu``).

What measures is imported where it is used, so that ``compare --runs`` reads stored runs
without the runner, the kinds' registry of measurements or the targets. The outcome, a
``Compared``, is turned into a report by ``kbench.report.comparison.outcome.comparison_report``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from kbench.contract.progress import Step, no_steps
from kbench.contract.request import BadRequest
from kbench.engine.compare_spec import AUTO, INTERLEAVED, TRIALS, ComparisonSpec

if TYPE_CHECKING:
    from kbench.engine.compare_protocol import ComparisonOutcome, ComparisonSide
    from kbench.engine.comparison_sides import Sides
    from kbench.engine.instructions import CountedComparison
    from kbench.engine.interleaved_outcome import InterleavedOutcome
    from kbench.engine.noise_floor import NoiseFloor
    from kbench.profile.folded import FoldedProfile
    from kbench.store.db import Store
    from kbench.targets.base import Target

STORED_INTERLEAVED = "stored interleaved"
STORED_COPIES = "stored copies"
STORED_TRIALS = "stored trials"
STORED = "stored runs"
"""Before the runs are read: one of the three above."""
MODULES = "modules"
MODULE_COPIES = "module copies"
COUNTS = "counts"

Work = Literal["trials", "blocks", "counting"]


class Display(Protocol):
    """Where a comparison shows its progress: ``work(kind, total)`` is entered around the
    measuring and yields the step listener (``kbench.contract.progress.Step``)."""

    def work(self, kind: Work, total: float | None) -> AbstractContextManager[Step]: ...


class Silent:
    """The display of a comparison nobody watches."""

    @contextmanager
    def work(self, kind: Work, total: float | None) -> Iterator[Step]:
        yield no_steps


@dataclass(frozen=True)
class Counted:
    """The counted part of a comparison (``--metric instructions``)."""

    outcome: CountedComparison
    label_kind: str
    context: dict[str, object]


@dataclass(frozen=True)
class Timed:
    """The timed part of a comparison: the outcome of its design and what its report states."""

    design: str
    subject: str
    """What is compared: the benchmark, or the metric of stored runs (the report's title starts with it)."""
    label_kind: str
    margin: float | None
    margin_source: str
    context: dict[str, object]
    trials: ComparisonOutcome | None = None
    interleaved: InterleavedOutcome | None = None
    builds: tuple[str, ...] = ()
    build_of: tuple[int, ...] = ()
    noise_floor: NoiseFloor | None = None
    profiles: dict[str, FoldedProfile] | None = None
    """The sides' profiles; None when none were taken (stored: when not every side has one)."""
    profile_problems: tuple[str, ...] = ()
    stored_profiles: bool = False

    @property
    def labels(self) -> list[str]:
        if self.builds:
            return list(self.builds)
        if self.interleaved is not None:
            return [side.label for side in self.interleaved.sides]
        assert self.trials is not None
        return [side.side.label for side in self.trials.sides]


@dataclass(frozen=True)
class Compared:
    """A comparison's outcome: counted, timed, or both (instructions first)."""

    spec: ComparisonSpec
    counted: Counted | None
    timed: Timed | None
    failures: dict[str, int] = field(default_factory=dict)
    side_runs: dict[str, list[int]] = field(default_factory=dict)


def designs(spec: ComparisonSpec) -> tuple[str, ...]:
    """The designs ``compare(spec)`` uses, in order, without measuring (a checked spec: ``compare_spec.check``):
    ``STORED`` for stored runs (which of the three, their runs tell), ``COUNTS`` first with instructions, and
    for measured sides the design ``choose_design`` picks (the sides are built, which looks the benchmark up)."""
    _refuse_counted_and_timed_runs(spec)
    counted = (COUNTS,) if spec.counting else ()
    if spec.counting and spec.time_metric is None:
        return counted
    if spec.run_sets:
        return (STORED,)
    if spec.modules:
        return (*counted, MODULE_COPIES if (spec.copies or 1) > 1 else MODULES)
    return (*counted, _measured_design(spec, _sides(spec).sides))


def _refuse_counted_and_timed_runs(spec: ComparisonSpec) -> None:
    if spec.counting and spec.time_metric is not None and spec.run_sets:
        raise BadRequest("--metric instructions,TIME: stored runs are counted or timed, not both; compare "
                         "them with --metric instructions")


def compare(spec: ComparisonSpec, store: Store, *, display: Display | None = None) -> Compared:
    """The comparison ``spec`` asks for (module docstring), stored in ``store`` (stored runs: read
    from it). BadRequest, RunNotFound and TargetError go to the caller."""
    from kbench.engine.failures import refuse_timed_failures
    from kbench.engine.run_selection import select_runs
    from kbench.engine.stored_comparison import runs_label

    display = display or Silent()
    selected = [select_runs(store, selector, spec.benchmark) for selector in spec.run_sets]
    side_runs = {runs_label(ids): ids for ids in selected}
    if not spec.ignore_failure:
        refuse_timed_failures(store, side_runs)
    counted = None
    if spec.counting:
        _refuse_counted_and_timed_runs(spec)
        counted = _count(spec, store, selected, display)
    timed = None
    if spec.run_sets and not spec.counting:
        timed = _stored(spec, store, selected)
    elif spec.modules and spec.time_metric is not None:
        timed = _modules(spec, store, display)
    elif spec.time_metric is not None:
        timed, side_runs = _measured(spec, store, display)
    from kbench.engine.failures import failure_counts

    return Compared(spec, counted, timed, failure_counts(store, side_runs), side_runs)


def _stored(spec: ComparisonSpec, store: Store, selected: list[list[int]]) -> Timed:
    from kbench.compare.placement import builds_of
    from kbench.engine.noise_floor import comparison_noise_floor
    from kbench.engine.profiling import stored_side_profiles
    from kbench.engine.stored_comparison import (
        measure_stored_margins,
        measured_on,
        stored_interleaved,
        stored_outcome,
    )

    replayed = stored_interleaved(store, selected, alpha=spec.alpha, margin=spec.margin, counters=bool(spec.counters))
    if replayed is not None:
        labels = [s.label for s in replayed.sides]
        copies_of = builds_of(replayed.measured_labels)
        if copies_of is not None:
            builds, build_of = copies_of
            margin, source = _margin(store, spec, replayed.sides[0].side, TRIALS)
            return Timed(STORED_COPIES, replayed.metrics[0].name, "stored", margin, source,
                         measured_on(store, selected, list(replayed.measured_labels)), interleaved=replayed,
                         builds=tuple(builds), build_of=tuple(build_of))
        margin, source = _margin(store, spec, replayed.sides[0].side, INTERLEAVED)
        if margin is None:
            measure_stored_margins(replayed, spec.alpha)
        profiles = stored_side_profiles(store, {s.label: s.run_id for s in replayed.sides})
        return Timed(STORED_INTERLEAVED, replayed.metrics[0].name, "stored", margin, source,
                     measured_on(store, selected, labels), interleaved=replayed, profiles=profiles,
                     stored_profiles=True)
    outcome = stored_outcome(store, selected, benchmark=spec.benchmark, counters=bool(spec.counters))
    margin, source = _margin(store, spec, outcome.sides[0].side, TRIALS)
    labels = [s.side.label for s in outcome.sides]
    context = measured_on(store, selected, labels)
    floor = comparison_noise_floor(store, outcome)
    first_runs = {s.side.label: s.runs[0].run_id for s in outcome.sides if s.runs}
    return Timed(STORED_TRIALS, outcome.sides[0].primary_metric, "stored", margin, source, context, trials=outcome,
                 noise_floor=floor, profiles=stored_side_profiles(store, first_runs), stored_profiles=True)


def _modules(spec: ComparisonSpec, store: Store, display: Display) -> Timed:
    from kbench.compare.budget import check_blocks
    from kbench.engine.comparison_sides import module_comparison
    from kbench.profile.defaults import COUNTERS_BY_DEFAULT
    from kbench.targets.suite_runner import suite_tools

    kernel = spec.kernels[0] if spec.kernels else None
    with module_comparison(kernel, spec.modules, spec.benchmark, dict(spec.params), spec.samples,
                           copies=spec.copies or 1, local_kernel=spec.local_kernel,
                           suite_tools=suite_tools([], perf=spec.profile)) as (target, found):
        counting = COUNTERS_BY_DEFAULT if spec.counters is None else spec.counters
        sides = [replace(side, request=replace(side.request, counters=counting)) for side in found.sides]
        margin, source = _margin(store, spec, sides[0], TRIALS if found.builds else INTERLEAVED)
        if spec.blocks is not None and (refusal := check_blocks(spec.blocks, alpha=spec.alpha)):
            raise BadRequest(refusal)
        # with copies, a build's profile is its first copy's, under the build's label
        first_copies = {found.build_of.index(build): label for build, label in enumerate(found.builds)}
        interleaved, (profiles, problems) = _measure_interleaved(
            spec, store, sides, margin, display, target=target, profile_as=first_copies or None)
    return Timed(MODULE_COPIES if found.builds else MODULES, found.title, found.label_kind, margin, source,
                 _context(), interleaved=interleaved, builds=found.builds, build_of=found.build_of,
                 profiles=profiles if spec.profile else None, profile_problems=tuple(problems))


def _sides(spec: ComparisonSpec) -> Sides:
    from kbench.engine.comparison_sides import build_sides

    return build_sides(spec.benchmark, spec.kernels, spec.commands, dict(spec.params), spec.samples)


def _measured_design(spec: ComparisonSpec, sides: list[ComparisonSide]) -> str:
    from kbench.engine.comparison_sides import choose_design

    trial_options = spec.trials is not None or spec.min_trials is not None
    return choose_design(TRIALS if spec.design == AUTO and trial_options else spec.design, sides)


def _measured(spec: ComparisonSpec, store: Store, display: Display) -> tuple[Timed, dict[str, list[int]]]:
    from kbench.compare.budget import check_blocks, check_trials
    from kbench.engine.noise_floor import comparison_noise_floor
    from kbench.profile.defaults import COUNTERS_BY_DEFAULT

    found = _sides(spec)
    counting = COUNTERS_BY_DEFAULT if spec.counters is None else spec.counters
    found = replace(found, sides=[replace(side, request=replace(side.request, counters=counting,
                                                                ignore_failure=spec.ignore_failure))
                                  for side in found.sides])
    chosen = _measured_design(spec, found.sides)
    margin, source = _margin(store, spec, found.sides[0], chosen)
    if chosen == INTERLEAVED:
        if spec.blocks is not None and (refusal := check_blocks(spec.blocks, alpha=spec.alpha)):
            raise BadRequest(refusal)
        interleaved, (profiles, problems) = _measure_interleaved(spec, store, found.sides, margin, display)
        return (Timed(INTERLEAVED, found.title, found.label_kind, margin, source, _context(), interleaved=interleaved,
                      profiles=profiles if spec.profile else None, profile_problems=tuple(problems)),
                {side.label: [side.run_id] for side in interleaved.sides})
    max_trials = spec.trials or 10
    first_look = min(spec.min_trials or 5, max_trials)
    refusal = check_trials(max_trials, alpha=spec.alpha, adaptive=not spec.fixed, min_trials=first_look)
    if refusal is not None:
        raise BadRequest(refusal)
    outcome = _measure_trials(spec, store, found.sides, max_trials, first_look, margin, display)
    side_runs = {s.side.label: [run.run_id for run in s.runs] for s in outcome.sides}
    context, floor = _context(), comparison_noise_floor(store, outcome)
    timed = Timed(TRIALS, found.title, found.label_kind, margin, source, context, trials=outcome, noise_floor=floor)
    if spec.profile:
        from kbench.engine.profiling import ProfiledSide, profile_sides
        from kbench.engine.target_factory import target_factory

        profiled = [ProfiledSide(s.side.label, s.runs[0].run_id, s.side.benchmark, s.side.request, s.side.kernel)
                    for s in outcome.sides if s.runs]
        factory = target_factory((side.benchmark for side in found.sides), perf=True)
        profiles, problems = profile_sides(store, profiled, factory)
        timed = replace(timed, profiles=profiles, profile_problems=tuple(problems))
    return timed, side_runs


def _margin(store: Store, spec: ComparisonSpec, base: ComparisonSide, design: str) -> tuple[float | None, str]:
    """(margin, where it comes from): ``--margin``, else ``default_margin``."""
    if spec.margin is not None:
        return spec.margin, f"±{100 * spec.margin:g}% (--margin {spec.margin_text})"
    return default_margin(store, base, design)


def default_margin(store: Store, side: ComparisonSide, design: str) -> tuple[float | None, str]:
    """(margin as a fraction, where it comes from) for a comparison whose base is ``side`` and
    whose design is ``design`` (INTERLEAVED or TRIALS); None: the interleaved comparison
    measures it from its blocks."""
    from kbench.compare.noise_margin import MARGIN_FROM_NOISE
    from kbench.compare.thresholds import DEFAULT_MARGIN, MAX_NOISE_MARGIN, NOISE_MARGIN_MIN_BLOCKS

    target = side.kernel or "local"
    calibration = store.latest_calibration(side.benchmark.name, target)
    if calibration is not None:
        stored: dict[str, Any] = calibration.get("trials") or {}
        margin_pct = stored.get("margin_pct")
        if margin_pct is not None and dict(calibration.get("params") or {}) == dict(side.request.params):
            return float(margin_pct) / 100.0, f"±{float(margin_pct):g}% from A/A calibration {calibration['id']}"
    if design == INTERLEAVED:
        return None, (f"{MARGIN_FROM_NOISE}, once {NOISE_MARGIN_MIN_BLOCKS} blocks are in (±{100 * DEFAULT_MARGIN:g}% "
                      f"to ±{100 * MAX_NOISE_MARGIN:g}%)")
    return DEFAULT_MARGIN, (f"±{100 * DEFAULT_MARGIN:g}% (the default; `kbench calibrate` measures one for "
                            "this benchmark and machine)")


def _measure_trials(
    spec: ComparisonSpec, store: Store, sides: list[ComparisonSide], trials: int, min_trials: int,
    margin: float | None, display: Display,
) -> ComparisonOutcome:
    from kbench.engine.compare_protocol import run_comparison
    from kbench.engine.target_factory import needs_perf, target_factory

    with display.work("trials", trials * len(sides)) as step:
        done = 0

        def on_trial(label: str, index: int, planned: int) -> None:
            nonlocal done
            done += 1
            step(f"{label} trial {index + 1}", done, trials * len(sides))

        benchmarks = [side.benchmark for side in sides]
        perf = needs_perf(benchmarks, counters=any(side.request.counters for side in sides), profile=False)
        return run_comparison(
            store, sides, target_factory(benchmarks, perf=perf), max_trials=trials, min_trials=min(min_trials, trials),
            adaptive=not spec.fixed, alpha=spec.alpha, margin=margin, seed=spec.seed,
            trials_per_boot=spec.trials_per_boot, on_trial=on_trial, metric=spec.metric,
        )


def _measure_interleaved(
    spec: ComparisonSpec, store: Store, sides: list[ComparisonSide], margin: float | None, display: Display, *,
    target: Target | None = None, profile_as: dict[int, str] | None = None,
) -> tuple[InterleavedOutcome, tuple[dict[str, FoldedProfile], list[str]]]:
    """The interleaved comparison, and with ``--profile`` each side profiled in a run of its own
    (``profile_as``: only these sides, under these labels)."""
    from kbench.engine.in_kernel import interleaved_comparison
    from kbench.engine.profiling import ProfiledSide, profile_sides
    from kbench.engine.target_factory import needs_perf
    from kbench.targets.factory import make_target
    from kbench.targets.suite_runner import suite_tools

    with display.work("blocks", 1.0) as step:
        def on_slot(label: str, block: int, fraction: float) -> None:
            step(f"block {block + 1}: {label}", fraction, 1.0)

        def measure(machine: Target) -> tuple[InterleavedOutcome, tuple[dict[str, FoldedProfile], list[str]]]:
            outcome = interleaved_comparison(
                store, sides, machine, budget_s=spec.budget_s, max_blocks=spec.blocks, metric=spec.metric,
                alpha=spec.alpha, margin=margin, margin_from_noise=margin is None, seed=spec.seed,
                samples=spec.samples, adaptive=not spec.fixed, on_slot=on_slot, in_kernel=not spec.whole_runs)
            if not spec.profile:
                return outcome, ({}, [])
            step("profiling each side (a run of its own)", 1.0, 1.0)
            labels = profile_as or {index: side.label for index, side in enumerate(outcome.sides)}
            profiled = [ProfiledSide(label, outcome.sides[index].run_id, outcome.sides[index].side.benchmark,
                                     outcome.sides[index].side.request) for index, label in labels.items()]
            return outcome, profile_sides(store, profiled, machine)

        if target is not None:
            return measure(target)
        tools = suite_tools([], perf=needs_perf([s.benchmark for s in sides], counters=False, profile=spec.profile))
        with make_target(sides[0].kernel, local_kernel=spec.local_kernel, suite_tools=tools) as machine:
            return measure(machine)


def _count(spec: ComparisonSpec, store: Store, selected: list[list[int]], display: Display) -> Counted:
    """The counted comparison of the sides (``--metric instructions``, docs/instructions.md)."""
    from kbench.engine.instructions import counted_comparison, stored_counted_comparison

    if selected:
        outcome = stored_counted_comparison(store, selected, alpha=spec.alpha, margin=spec.margin)
        return Counted(outcome, "stored", _context(memory=False))
    copies = spec.copies if spec.time_metric is None else None
    with display.work("counting", None) as step:
        def on_run(label: str, index: int) -> None:
            step(f"counting instructions: {label}, run {index + 1}", index, None)

        if spec.modules:
            from kbench.engine.comparison_sides import module_comparison

            kernel = spec.kernels[0] if spec.kernels else None
            with module_comparison(kernel, spec.modules, spec.benchmark, dict(spec.params), spec.samples,
                                   copies=copies or 1, local_kernel=spec.local_kernel,
                                   count_instructions=True) as (target, found):
                outcome = counted_comparison(store, found.sides, alpha=spec.alpha, margin=spec.margin, target=target,
                                             on_run=on_run)
        else:
            found = _sides(spec)
            outcome = counted_comparison(store, found.sides, alpha=spec.alpha, margin=spec.margin,
                                         local_kernel=spec.local_kernel, on_run=on_run)
    return Counted(outcome, found.label_kind, _context(memory=False))


def _context(*, memory: bool = True) -> dict[str, object]:
    """The machine a comparison measured on, as its report states it."""
    from kbench.sysinfo.collect import collect_sysinfo

    info: dict[str, Any] = collect_sysinfo()
    context: dict[str, object] = {"host": info["hostname"], "cpu": f"{info['cpu']['model']} x {info['cpu']['count']}"}
    if memory:
        context["memory"] = f"{(info['memory_bytes'] or 0) / 2**30:.1f} GiB"
    context["host kernel"] = info["kernel"]["release"]
    context["virtualization"] = info["virtualization"].get("vm")
    return context

