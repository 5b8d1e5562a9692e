"""What every target (where code runs) is: its description; its transports are in ``transport``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    pass

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


TIMED_OUT = -1000
"""ProbeInvocation.exit_code of a probe stopped at its bound."""


class Target(Protocol):
    """A place that runs benchmarks: this kernel, or a kernel booted in qemu (or a wrapper of one)."""

    def info(self) -> TargetInfo: ...

    def sysinfo(self) -> dict[str, Any]: ...
