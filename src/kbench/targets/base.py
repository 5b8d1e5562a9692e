"""What every target (where code runs) offers the engine."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kbench.contract.benchmark import Benchmark
    from kbench.contract.measurement import Measurement
    from kbench.contract.request import RunRequest

ProgressCallback = Callable[[float, float], None]
"""Called with (done, total) as a run advances; units are the probe's."""


class TargetError(RuntimeError):
    """The target could not run the benchmark; the message says why and what to do."""


@dataclass(frozen=True)
class TargetInfo:
    """Where a run happened: stored with every run."""

    kind: str  # "local" or "vm"
    kernel_release: str
    kernel_version: str
    accel: str | None = None  # "kvm" / "tcg" for vm targets
    build_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class ProbeInvocation:
    """The result of one probe process: raw stdout bytes, stderr, exit code."""

    stdout: bytes
    stderr: str
    exit_code: int
    interrupted: bool


class Target(Protocol):
    """A place that runs benchmarks: this kernel, or a kernel booted in qemu."""

    def info(self) -> TargetInfo: ...

    def sysinfo(self) -> dict[str, Any]: ...

    def measure(
        self, benchmark: Benchmark, request: RunRequest, progress: ProgressCallback | None = None
    ) -> Measurement:
        """Run the benchmark once and return its raw samples (TargetError on failure)."""
        ...
