"""SysfsIO over a VM guest's agent: shell redirections for writes, cat for reads."""

from __future__ import annotations

import errno
import os
from collections.abc import Mapping

from kbench.targets.kmod_sysfs import LiveSamples, SysfsError
from kbench.targets.vm import GuestRequestError, VmSession
from kbench.targets.vm.session import Follow

_MESSAGES = sorted(
    ((os.strerror(code), code) for code in errno.errorcode), key=lambda item: -len(item[0])
)


def errno_from_message(message: str) -> int:
    """The errno whose strerror text appears in a busybox error message (EIO if none)."""
    for text, code in _MESSAGES:
        if text in message:
            return code
    return errno.EIO


class GuestSysfs:
    def __init__(self, session: VmSession):
        self.session = session

    def read_text(self, path: str, timeout: float | None = None, live: LiveSamples | None = None) -> str:
        """An attribute's text. Without ``timeout`` it answers at once and the agent reads it
        itself (about 1 ms under TCG); with one it may run something (``run``), so ``cat``
        reads it and is killed at the timeout, which interrupts the run in the kernel (a
        process started in the guest costs about 25 ms under TCG). ``live`` is followed by
        the agent while ``cat`` runs (``VmSession.exec``'s ``follow``)."""
        if timeout is None:
            try:
                return self.session.read_file(path).decode()
            except GuestRequestError as exc:
                raise SysfsError(path, errno_from_message(str(exc)), str(exc)) from exc
        follow = None if live is None else Follow(live.path, live.sink)
        result = self.session.exec(["cat", path], timeout=timeout, follow=follow)
        if result.rc != 0 or result.timed_out:
            detail = result.stderr.decode(errors="replace").strip()
            code = errno.ETIMEDOUT if result.timed_out else errno_from_message(detail)
            raise SysfsError(path, code, detail)
        return result.text

    def read_bytes(self, path: str) -> bytes:
        return self.session.read_file(path)

    def write_values(self, directory: str, values: Mapping[str, str]) -> None:
        for name, value in values.items():
            path = f"{directory}/{name}"
            try:
                self.session.write_file(path, value.encode())
            except GuestRequestError as exc:
                raise SysfsError(path, errno_from_message(str(exc))) from exc
