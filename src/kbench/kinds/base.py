"""What every kind of benchmark provides to the catalog and the engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kbench.contract.benchmark import Benchmark, ParamSpec
from kbench.contract.limits import KindLimits
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.contract.series import MetricSeries
from kbench.targets.base import TIMED_OUT, ProgressCallback, Target, TargetError
from kbench.targets.transport import Transport


@dataclass(frozen=True)
class PrimaryMetric:
    """The metric a run is stored under, with its unit and direction."""

    name: str
    unit: str
    direction: str


class Kind(Protocol):
    """One kind of benchmark (probe, kfunc, scale, suite, trace).

    Besides its benchmarks and its runs, a kind says what its runs are, so that no other room
    switches on its name (docs/architecture.md): ``sample_unit``, ``in_kernel``, ``whole_tool``,
    ``scaling``, ``limits``, ``shared_params``, ``operation_syscall`` and what it counts and
    profiles (``counted``, ``counters_by_default``, ``counts_with_perf``, ``profiled``).
    """

    @property
    def name(self) -> str: ...

    @property
    def sample_unit(self) -> str | None:
        """The unit in which each sample times one operation (``ns``, ``cycles``); None when a
        run's values are no timed operations (intervals of N tasks, a whole tool's iterations,
        trace entries). Such runs can be interleaved slot by slot and traced with ``--during``."""
        ...

    @property
    def in_kernel(self) -> bool:
        """Its code runs in kbench.ko's own threads: a kernel must load the module (on this
        kernel only with ``--local-kernel``), and a run resets and finalizes kbench.ko's trace log."""
        ...

    @property
    def whole_tool(self) -> bool:
        """A run is a whole tool run ``iterations`` times (one trial; a job's ``runtime`` is the
        tool's own parameter); a guest that runs only such benchmarks needs no kbench.ko."""
        ...

    @property
    def scaling(self) -> bool:
        """Its runs give a per-task and a total rate (``<metric>`` and ``….ops``) of N tasks: a
        job swept over ``nr_task`` draws a scaling curve."""
        ...

    @property
    def limits(self) -> KindLimits | None:
        """What a request may ask of its runs (checked before anything runs), or None: unchecked."""
        ...

    @property
    def shared_params(self) -> tuple[ParamSpec, ...]:
        """Parameters every benchmark of the kind takes (``kbench list`` names them once)."""
        ...

    def operation_syscall(self, benchmark: Benchmark) -> int | None:
        """The system call one operation of ``benchmark`` is, when it is one (tracking and
        ``crosscheck`` count its entries)."""
        ...

    @property
    def counted(self) -> bool:
        """Its runs take perf counters (``--counters``, a job's ``counters:``): the probe's
        workloads (will-it-scale's tasks included) and kbench.ko count around their measured
        loops, a suite's tool runs under ``perf stat``."""
        ...

    @property
    def counters_by_default(self) -> bool:
        """``kbench run`` counts unless told otherwise. Measured on the development VM
        (docs/PERFORMANCE.md, issue 24): --counters moved getppid's per-operation median by
        -0.25% and a 100 ms command's CPU time by +0.4% (median of paired rounds), within the
        goals of 2% and 1%; kbench.ko's counters moved the per-call median of kfunc.fib4_lookup
        by -0.4% and of kfunc.spin loops=100 by 0.0% in a TCG guest (20 paired rounds, quartiles
        of the round ratios within 1.5%): they are switched outside the timed loop. A suite's
        tool runs under ``perf stat`` (another process, inherited counters in every worker) and
        will-it-scale's tasks inherit theirs: not shown negligible on this loaded machine, so
        off unless asked."""
        ...

    @property
    def counts_with_perf(self) -> bool:
        """Its counters are taken by ``perf stat`` around the run (a guest must carry perf)."""
        ...

    @property
    def profiled(self) -> bool:
        """``--profile`` (a job's ``profile:``) records a call-graph profile of it (``registry.profile``)."""
        ...

    def benchmarks(self) -> tuple[Benchmark, ...]:
        """Its catalog entries, in its own order."""
        ...

    def primary_metric(self, benchmark: Benchmark, params: Mapping[str, str]) -> str:
        """The metric a run of ``benchmark`` with ``params`` is stored under."""
        ...

    def wrote(self, header: Mapping[str, Any]) -> bool:
        """True when ``header`` (a measurement's, also a stored one) is this kind's output."""
        ...

    def series(
        self, measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
    ) -> list[MetricSeries]:
        """Every metric of ``measurement``, the primary one first (none without samples)."""
        ...

    def run(
        self, target: Target, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        """Run ``benchmark`` once on ``target`` with its transport operations (TargetError on failure)."""
        ...


class KindDefaults:
    """What a kind is unless it says otherwise (``Kind``'s properties): none of them. A kind
    class derives from this and states only what it is."""

    sample_unit: str | None = None
    in_kernel = False
    whole_tool = False
    scaling = False
    limits: KindLimits | None = None
    shared_params: tuple[ParamSpec, ...] = ()
    counted = False
    counters_by_default = False
    counts_with_perf = False
    profiled = False

    def operation_syscall(self, benchmark: Benchmark) -> int | None:
        return None


def transport_of(target: Target, benchmark: Benchmark) -> Transport:
    """``target`` as a transport (TargetError for a target that runs no benchmarks of that kind)."""
    if not isinstance(target, Transport):
        raise TargetError(f"{benchmark.name}: this target does not run {benchmark.kind} benchmarks")
    return target


def run_probe_measurement(
    target: Transport, benchmark: Benchmark, args: Sequence[str], bound: float | None,
    progress: ProgressCallback | None = None, spill: Path | None = None,
) -> Measurement:
    """``kbench-probe ARGS`` on the target, its output as a measurement (its samples streamed
    to ``spill`` as they are taken, when given)."""
    from kbench.targets.probe_measurement import measurement_from_invocation

    invocation = target.run_probe(args, progress, bound, spill)
    if invocation.exit_code == TIMED_OUT:
        raise TargetError(f"{benchmark.name} did not finish within its bound of {bound or 0:.0f} s in the guest; "
                          "it was stopped")
    return measurement_from_invocation(invocation)


def per_operation_series(
    measurement: Measurement, primary: PrimaryMetric, *, subtract_overhead: bool = False
) -> list[MetricSeries]:
    """One series: the time of one operation in each sample (probe and kfunc runs)."""
    if measurement.n == 0:
        return []
    values = measurement.per_op(primary.unit, subtract_overhead=subtract_overhead)
    return [MetricSeries(primary.name, primary.unit, primary.direction, values)]
