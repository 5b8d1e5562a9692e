"""Run every instance of an expanded job file, sharing one target per distinct target spec."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from kbench.catalog.benchmarks import lookup
from kbench.contract.benchmark import Benchmark
from kbench.contract.request import RunRequest
from kbench.engine.guest_setup import capped_test_size, describe_setup, has_guest_setup, set_up_guest
from kbench.engine.runner import RunResult, execute_run
from kbench.engine.target_factory import TargetFactory
from kbench.jobs import JobInstance
from kbench.kernels.spec import is_remote
from kbench.kinds.instructions.benchmark import METRIC as INSTRUCTIONS
from kbench.kinds.instructions.benchmark import counted
from kbench.kinds.instructions.run import counted_request
from kbench.kinds.registry import kind_of
from kbench.store.db import Store
from kbench.sysinfo.tune import APPLIED, UNCHANGED, apply_tuning, reset_tuning
from kbench.targets.base import Target, TargetError

InstanceCallback = Callable[[JobInstance, int], None]


@dataclass(frozen=True)
class InstanceRuns:
    """An instance of the job and the stored runs it produced (one per trial)."""

    instance: JobInstance
    runs: list[RunResult]


def _grouped_by_target(instances: list[JobInstance]) -> Iterator[tuple[tuple[str, bool], list[JobInstance]]]:
    """The instances by target, and apart on one target when counted (a guest that counts
    instructions runs under kbench's TCG plugin, which would slow the timed ones)."""
    order: list[tuple[str, bool]] = []
    groups: dict[tuple[str, bool], list[JobInstance]] = {}
    for instance in instances:
        key = (_resolved_target(instance), instance.metric == INSTRUCTIONS)
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append(instance)
    for key in order:
        yield key, groups[key]


def _counting_guest(spec: str | None) -> AbstractContextManager[Target]:
    """A guest booted to count instructions (kbench's TCG plugin, ``targets.vm.plugin``)."""
    from kbench.targets.factory import make_target

    return make_target(spec, count_instructions=True)


def _resolved_target(instance: JobInstance) -> str:
    """``local``, ``deb:…``, ``tree:URL@REV`` as written; a relative path (of a kernel, or of a
    ``tree:`` spec's tree) is taken from the job file's folder."""
    spec = instance.target
    if spec.startswith("tree:"):
        tree = spec.removeprefix("tree:")
        if tree.startswith(("/", "~")) or not instance.source or is_remote(tree):
            return spec
        return f"tree:{Path(instance.source).parent / tree}"
    if spec == "local" or ":" in spec.split("/")[0] or Path(spec).is_absolute() or not instance.source:
        return spec
    return str(Path(instance.source).parent / spec)


def run_job(
    store: Store,
    instances: list[JobInstance],
    make_target: TargetFactory,
    on_trial: InstanceCallback | None = None,
    *,
    commit: str | None = None,
    label: str | None = None,
) -> list[InstanceRuns]:
    """Measure each instance ``iterations`` times (a suite does its iterations inside one run).

    ``commit`` and ``label`` (the version measured) are stored with every run.

    Instances are validated before this is called (``expand_job``); a target is started
    once for all the instances that name it (one VM boot per kernel). A run that was
    interrupted (Ctrl-C, SIGTERM) ends the job: the instances measured so far are
    returned, the interrupted run last.
    """
    results: dict[str, InstanceRuns] = {}
    try:
        _run_groups(store, instances, make_target, on_trial, results, commit, label)
    finally:
        if any(instance.cpufreq_governor for instance in instances):
            reset_tuning(["governor"])
    return [results[instance.id] for instance in instances if instance.id in results]


def _run_groups(
    store: Store,
    instances: list[JobInstance],
    make_target: TargetFactory,
    on_trial: InstanceCallback | None,
    results: dict[str, InstanceRuns],
    commit: str | None,
    label: str | None,
) -> None:
    for (target_spec, counting), group in _grouped_by_target(instances):
        # this machine counts by itself (the PMU or valgrind); a guest counts with kbench's TCG plugin
        factory = _counting_guest if counting and target_spec != "local" else make_target
        with factory(target_spec) as target:
            for instance in group:
                context = [*_apply_governor(instance, target_spec), *instance.warnings]
                benchmark = lookup(instance.benchmark)
                request = replace(instance.to_run_request(), commit=commit, label=label)
                if instance.guest_setup or has_guest_setup(target):  # LKP's set-up: made (or undone) in
                    made = set_up_guest(target, instance.guest_setup)  # the guest, only when it changes
                    request, capped = capped_test_size(request, made)
                    context += [*describe_setup(made), *capped]
                if instance.metric == INSTRUCTIONS:  # counted, not timed (docs/instructions.md)
                    benchmark = counted(benchmark)
                    request = counted_request(benchmark, replace(request, counters=False))
                runs: list[RunResult] = []
                if kind_of(benchmark).whole_tool:
                    request = replace(request, iterations=instance.iterations)
                    trials = 1
                else:
                    trials = instance.iterations
                results[instance.id] = InstanceRuns(instance=instance, runs=runs)
                for trial in range(trials):
                    if on_trial is not None:
                        on_trial(instance, trial)
                    run = execute_run(store, benchmark, request, target, context_warnings=context)
                    runs.append(run)
                    if run.status == "interrupted":
                        return
                if instance.profile:  # every run a report may compare has its profile
                    for run in runs:
                        _profile_instance(store, run, target, benchmark, request)


def _profile_instance(store: Store, run: RunResult, target: Target, benchmark: Benchmark,
                      request: RunRequest) -> None:
    """The instance's profile (``profile:``, LKP's ``perf-profile:``) beside ``run``, stored with it; a
    profile that cannot be taken is a warning of that run, not the job's failure."""
    from kbench.engine.profiling import profile_run

    try:
        profile_run(store, run.run_id, target, benchmark, request)
    except TargetError as exc:
        store.add_warning(run.run_id, f"no profile: {exc}")


def _apply_governor(instance: JobInstance, target_spec: str) -> list[str]:
    """Apply the job's ``cpufreq_governor`` (local kernel only); say what could not be done.

    The governor in force is stored with each run anyway (sysinfo noise state).
    """
    wanted = instance.cpufreq_governor
    if not wanted:
        return []
    if target_spec != "local":
        return [f"cpufreq_governor={wanted} not applied: the VM target's guest has no cpufreq"]
    report = apply_tuning({"governor": wanted})
    return [
        f"cpufreq_governor={wanted}: {result.status} ({result.detail})"
        for result in report.results
        if result.status not in (APPLIED, UNCHANGED)
    ]

