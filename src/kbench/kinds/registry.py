"""Every kind of benchmark, found by its name or by the output it wrote; a run of one on a target."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.kinds.base import Kind, transport_of
from kbench.targets.base import ProgressCallback, Target, TargetError
from kbench.targets.transport import RunWrapper

if TYPE_CHECKING:
    from kbench.kinds.kfunc.ab import KernelSlots
    from kbench.profile.folded import FoldedProfile

KIND_MODULES: dict[str, str] = {
    "probe": "kbench.kinds.probe",
    "kfunc": "kbench.kinds.kfunc",
    "scale": "kbench.kinds.scale",
    "suite": "kbench.kinds.suite",
    "trace": "kbench.kinds.trace",
    "instructions": "kbench.kinds.instructions",
}
"""Each kind's name and its module (whose ``KIND`` it is), in catalog order. A kind's module is
imported when that kind is first needed: a command about one kind (``show`` of a probe run,
``compare --runs``) does not pay for the others' catalogs (tests/unit/test_kind_switches.py
checks the names against the kinds)."""


class UnknownKind(LookupError):
    """No kind has that name."""


@functools.cache
def kind_named(name: str) -> Kind:
    module = KIND_MODULES.get(name)
    if module is None:
        raise UnknownKind(f"no benchmark kind {name!r}; the kinds: {', '.join(KIND_MODULES)}")
    kind: Kind = importlib.import_module(module).KIND
    return kind


def kinds() -> Iterator[Kind]:
    """Every kind in catalog order, each imported as the iteration reaches it."""
    return (kind_named(name) for name in KIND_MODULES)


def kind_of(benchmark: Benchmark) -> Kind:
    """The kind that runs ``benchmark`` (UnknownKind for a kind no longer known)."""
    return kind_named(benchmark.kind)


def kind_that_wrote(header: Mapping[str, Any]) -> Kind | None:
    """The kind whose output ``header`` is (None for a run that wrote no header)."""
    for kind in kinds():
        if kind.wrote(header):
            return kind
    return None


def measure(
    target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
) -> Measurement:
    """Run ``benchmark`` once on ``target``: its kind's runner over the target's transport.

    A target that wraps another (``RunWrapper``: tracking, a stored method's values) decides
    how: it is handed the run on the target it wraps. TargetError when the run fails.
    """
    try:
        kind = kind_named(benchmark.kind)
    except UnknownKind as exc:
        raise TargetError(f"{benchmark.name}: {exc}") from exc
    if isinstance(target, RunWrapper):
        return target.wrap_run(benchmark, request, lambda inner: measure(inner, benchmark, request, progress), kind)
    return kind.run(target, benchmark, request, progress)


def profile(target: Target, benchmark: Benchmark, request: RunRequest, seconds: float) -> FoldedProfile:
    """A profile of ``benchmark`` run as ``request`` says on ``target``, in a run of its own
    (``kbench.profile``): the probe's workloads for ``seconds`` of their measured region, a
    whole tool for one iteration, an in-kernel benchmark's thread for about ``seconds`` of its
    recorded loop; here or in a guest, with the perf of the kernel that runs them
    (``kinds.host_profile``). TargetError when the kind or the target cannot be profiled, or
    recording fails."""
    if isinstance(target, RunWrapper):
        raise TargetError(f"{benchmark.name}: --profile cannot be combined with a run made by another method "
                          "(--track, a crosscheck)")
    transport = transport_of(target, benchmark)
    if benchmark.kind == "probe":
        from kbench.kinds.probe.profile import profile_probe

        return profile_probe(transport, benchmark, request, seconds)
    if benchmark.kind == "suite":
        from kbench.kinds.suite.profile import profile_suite

        return profile_suite(transport, benchmark, request)
    if benchmark.kind == "kfunc":
        from kbench.kinds.kfunc.profile import profile_kfunc

        return profile_kfunc(transport, benchmark, request, seconds)
    raise TargetError(f"{benchmark.name}: --profile is not supported for {benchmark.kind} benchmarks "
                      "(user-space workloads, commands, suites and in-kernel benchmarks are)")


def runs_in_one_process(target: Target, benchmarks: Sequence[Benchmark]) -> bool:
    """True when runs of ``benchmarks`` on ``target`` can share one process (``measure_sequence``):
    the probe's workloads other than ``command``, on a target that wraps no runs."""
    return not isinstance(target, RunWrapper) and all(
        benchmark.kind == "probe" and benchmark.name != "command" for benchmark in benchmarks
    )


def measure_sequence(target: Target, runs: Sequence[tuple[Benchmark, RunRequest]]) -> list[Measurement]:
    """The runs one after another in one process (``runs_in_one_process`` must hold), a measurement
    each; interrupted: the ones finished and the one stopped (marked interrupted). TargetError
    when the runs fail."""
    from kbench.kinds.probe.run import run_probe_sequence

    if not runs_in_one_process(target, [benchmark for benchmark, _ in runs]):
        raise TargetError("these runs cannot share one process: only the probe's workloads (not command) can")
    return run_probe_sequence(transport_of(target, runs[0][0]), runs)


def kernel_slots(target: Target, sides: Sequence[tuple[Benchmark, RunRequest]]) -> KernelSlots | None:
    """The sides alternated inside kbench.ko (``kinds.kfunc.ab``) when they all are in-kernel
    benchmarks that can share one thread on ``target``; None otherwise."""
    from kbench.kinds.kfunc.ab import KernelSlots, why_not_in_module

    if why_not_in_module(target, sides) is not None:
        return None
    return KernelSlots(target, sides)
