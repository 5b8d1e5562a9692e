"""What can go wrong when kbench builds a kernel."""

from __future__ import annotations

from pathlib import Path

from kbench import exit_codes
from kbench.exit_codes import KbenchError


class KernelError(KbenchError):
    """Base of the kernels room's errors."""


class KernelSourceError(KernelError):
    """The tree is not a kernel source tree, or the revision names no commit of it."""


class KernelConfigError(KernelError):
    """The config asked for cannot be made: a fragment or config file that does not read, or
    options asked for that ``make olddefconfig`` did not keep (each listed with why)."""


class KernelBuildError(KernelError):
    exit_code = exit_codes.KERNEL_BUILD_FAILED

    """``make`` failed: the first compiler error (file and line) and the log's path."""

    def __init__(self, message: str, log: Path | None = None, first_error: str | None = None) -> None:
        super().__init__(message)
        self.log = log
        self.first_error = first_error
