"""What a target offers a benchmark kind: transport operations, and nothing by kind.

A target runs nothing by kind: a benchmark kind (``kbench.kinds``) makes a run out of
the target's transport operations (run the probe, reach kbench.ko's sysfs, run a tool
in the guest), and ``kbench.kinds.registry.measure`` picks the kind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kbench.targets.base import ProbeInvocation, ProgressCallback, Target

if TYPE_CHECKING:
    from kbench.contract.benchmark import Benchmark
    from kbench.contract.measurement import Measurement
    from kbench.contract.request import RunRequest
    from kbench.targets.kmod_sysfs import KbenchModule
    from kbench.targets.vm.session import VmSession


@dataclass(frozen=True)
class GuestShell:
    """A booted guest that runs tools through its agent, and where they get scratch space."""

    session: VmSession
    scratch_root: str


@runtime_checkable
class Transport(Target, Protocol):
    """The operations a kind's runner makes a run of."""

    in_guest: bool
    """True when runs happen in a booted guest: each is stopped at a bound the runner gives
    (``run_bound``), and the tools a run needs are carried in (``guest_shell``)."""

    def run_probe(
        self, args: Sequence[str], progress: ProgressCallback | None = None, bound: float | None = None,
        spill: Path | None = None,
    ) -> ProbeInvocation:
        """Run ``kbench-probe COMMAND --output FILE REST`` (``args`` = COMMAND, REST...); exit code
        TIMED_OUT if stopped at ``bound`` seconds. With ``spill`` (a ``run``), the samples reach
        that host file as they are taken (``kbench.contract.spill``), at least once a second."""
        ...

    def kbench_module(self, benchmark: str) -> AbstractContextManager[KbenchModule]:
        """kbench.ko loaded for a run of ``benchmark`` (TargetError saying why it cannot be)."""
        ...

    def guest_shell(self, tools: Sequence[str]) -> GuestShell | None:
        """A guest that has the host executables ``tools`` (booted again if it lacks one),
        or None when tools run on this machine."""
        ...


class RunKind(Protocol):
    """What a wrapper is told of the kind of the run it is handed (``kinds.base.Kind`` is one)."""

    @property
    def in_kernel(self) -> bool:
        """The run is timed in kbench.ko's threads, which reset and finalize its trace log themselves."""
        ...

    def operation_syscall(self, benchmark: Benchmark) -> int | None:
        """The system call one operation of ``benchmark`` is, when it is one."""
        ...


@runtime_checkable
class RunWrapper(Protocol):
    """A target that decides how a run on it is made: it runs the kind's runner on the
    target it wraps (``run(inner)``), around it (tracking) or instead of it."""

    def wrap_run(
        self, benchmark: Benchmark, request: RunRequest, run: Callable[[Target], Measurement], kind: RunKind
    ) -> Measurement: ...
