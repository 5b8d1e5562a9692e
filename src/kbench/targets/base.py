"""What every target (where code runs) is: its description; its transports are in ``transport``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kbench import exit_codes
from kbench.exit_codes import KbenchError

if TYPE_CHECKING:
    pass

ProgressCallback = Callable[[float, float], None]
"""Called with (done, total) as a run advances; units are the probe's."""


class TargetError(KbenchError, RuntimeError):
    """The target could not run the benchmark; the message says why and what to do."""

    exit_code = exit_codes.MEASUREMENT_FAILED


IGNORE_FAILURE_HINT = "a failed execution is never timed; --ignore-failure times failures too and counts them"


class ExecutionFailed(TargetError):
    """A measured execution failed: a non-zero exit, a death by signal, an operation's error.

    A failure is an outcome, not a time: the run stops at the first one (unless the request
    says ``ignore_failure``). ``what`` names what was executed (``command '…'``,
    ``syscall.open_close``), ``how`` the way it failed (``exit status 127``, ``killed by
    signal 9 (Killed)``, an errno's text), ``stderr`` the last line it wrote there ('' if none).
    """

    exit_code = exit_codes.EXECUTION_FAILED

    def __init__(self, what: str, how: str, stderr: str = "", *, side: str | None = None, record: int = 0) -> None:
        self.what = what
        self.how = how
        self.stderr = stderr
        self.side = side
        self.record = record  # which run of a probe sequence failed (0 for a single run)
        where = f"side {side}: " if side else ""
        said = f"; its stderr's last line: {stderr}" if stderr else ""
        super().__init__(f"{where}{what} failed: {how}{said} ({IGNORE_FAILURE_HINT})")

    def on_side(self, side: str) -> ExecutionFailed:
        """The same failure, naming the comparison's side it happened on."""
        return ExecutionFailed(self.what, self.how, self.stderr, side=side)


@dataclass(frozen=True)
class TargetInfo:
    """Where a run happened: stored with every run."""

    kind: str  # "local" or "vm"
    kernel_release: str
    kernel_version: str
    accel: str | None = None  # "kvm" / "tcg" for vm targets
    build_id: str | None = None
    details: dict[str, Any] = field(default_factory=dict)
    kernel_config: str | None = None
    """The kernel's ``.config`` when known: stored once per digest (``details["kernel"]`` names it)."""


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
