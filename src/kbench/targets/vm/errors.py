"""Exceptions raised by the VM target."""

from __future__ import annotations

from kbench.targets.base import TargetError


class VmTargetError(TargetError):
    """Base class of every error raised by ``kbench.targets.vm``: a target error like any
    other (the run is marked failed, the CLI exits 3 with the message)."""


class KernelResolveError(VmTargetError):
    """A kernel spec cannot be turned into a bootable kernel (+ modules, + headers)."""


class ModuleBuildError(VmTargetError):
    """An out-of-tree kernel module failed to build."""


class InitramfsError(VmTargetError):
    """The initramfs cannot be assembled (a file or kernel module is missing)."""


class GuestRequestError(VmTargetError):
    """The guest agent could not carry out one request (e.g. no such file).

    The VM itself is fine; the session stays usable.
    """


class VmError(VmTargetError):
    """The VM failed: boot failure, kernel panic or oops, hang, or qemu exited.

    ``console_tail`` holds the last lines of the guest console.
    """

    def __init__(self, message: str, console_tail: str = "") -> None:
        full = message
        if console_tail:
            full += "\n--- last guest console lines ---\n" + console_tail
        super().__init__(full)
        self.reason = message
        self.console_tail = console_tail
