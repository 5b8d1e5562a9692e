"""/sys/kernel/kbench/trace/ (docs/sysfs-ABI.md) on any ``SysfsIO``: the log and the probes.

``reset`` and ``finalize`` are the seed's ResetLog and FinalizeLog; ``read`` returns a
``TraceLog`` of the finalized entries with the key names, the probed functions and the
kernel's counters, checked against each other.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass

from kbench.targets.base import TargetError
from kbench.targets.key_values import parse_key_values
from kbench.targets.kmod_sysfs import SYSFS_ROOT, SysfsError, SysfsIO
from kbench.trace.log import ENTRY_DTYPE, TraceLog

TRACE_DIR = f"{SYSFS_ROOT}/trace"
MAX_FUNCTIONS = 16
"""Functions kbench.ko probes at once (KBENCH_FUNCS_MAX)."""


class TraceError(TargetError):
    """The log or a probe could not be set up or read; the message says why."""


class ProbeRefused(TraceError):
    """kbench.ko could not put a probe on a function (unknown, blacklisted, …)."""

    def __init__(self, function: str, err: int, message: str):
        self.function = function
        self.errno = err
        super().__init__(message)


@dataclass(frozen=True)
class ProbedFunction:
    slot: int
    name: str
    missed: int


_PROBE_ERRORS = {
    errno.ENOENT: "no function {name} in this kernel's symbols",
    errno.EINVAL: "{name} cannot be probed: kprobes refuse it (on the kprobe blacklist, not a function "
    "entry, or not kernel text; see /sys/kernel/debug/kprobes/blacklist)",
    errno.EILSEQ: "{name} cannot be probed: its address is not on an instruction boundary",
    errno.EEXIST: "{name} is probed already",
    errno.ENOSPC: f"kbench.ko probes at most {MAX_FUNCTIONS} functions at once",
    errno.EBUSY: "the log is on: probes change only between logs (finalize it first)",
    errno.EPERM: "putting a probe needs CAP_SYS_ADMIN (run as root)",
}


class KernelTraceLog:
    """kbench.ko's log buffer and function probes, wherever the module is loaded."""

    def __init__(self, io: SysfsIO):
        self.io = io

    def available(self) -> bool:
        """False for a kbench.ko without the log (built before tracepoints existed)."""
        return self.status_if_available() is not None

    def status_if_available(self) -> dict[str, str] | None:
        """``status``, or None for a kbench.ko without the log."""
        try:
            return self.status()
        except SysfsError as exc:
            if exc.errno == errno.ENOENT:
                return None
            raise

    def status(self) -> dict[str, str]:
        return parse_key_values(self.io.read_text(f"{TRACE_DIR}/status"))

    def reset(self) -> None:
        """Forget every entry and START stamp, and log (ResetLog)."""
        try:
            self.io.write_values(TRACE_DIR, {"control": "reset"})
        except SysfsError as exc:
            if exc.errno == errno.ENOSPC:
                raise TraceError(
                    f"kbench.ko's log has no room (size {self.status().get('size')} entries, "
                    f"layout {self.status().get('layout')}): give it a size"
                ) from exc
            raise

    def finalize(self) -> None:
        """Stop logging and make the entries readable (FinalizeLog); no effect unless logging."""
        self.io.write_values(TRACE_DIR, {"control": "finalize"})

    def set_size(self, entries: int) -> None:
        self.io.write_values(TRACE_DIR, {"size": str(entries)})

    def set_layout(self, layout: str) -> None:
        self.io.write_values(TRACE_DIR, {"layout": layout})

    def names(self) -> dict[int, str]:
        names = {}
        for line in self.io.read_bytes(f"{TRACE_DIR}/names").decode().splitlines():
            key, _, name = line.partition(" ")
            names[int(key)] = name
        return names

    def functions(self) -> list[ProbedFunction]:
        probed = []
        for line in self.io.read_text(f"{TRACE_DIR}/functions").splitlines():
            slot, name, rest = line.split(" ", 2)
            probed.append(ProbedFunction(int(slot), name, int(parse_key_values(rest).get("missed", 0))))
        return probed

    def probe(self, name: str) -> None:
        """Put a kretprobe on ``name``; ``ProbeRefused`` with the reason if kbench.ko cannot."""
        self._functions_write(f"+{name}", name)

    def unprobe(self, name: str) -> None:
        self._functions_write(f"-{name}", name)

    def clear_probes(self) -> None:
        self._functions_write("clear", "")

    def _functions_write(self, command: str, name: str) -> None:
        try:
            self.io.write_values(TRACE_DIR, {"functions": command})
        except SysfsError as exc:
            template = _PROBE_ERRORS.get(exc.errno)
            message = template.format(name=name) if template else str(exc)
            raise ProbeRefused(name, exc.errno, message) from exc

    def read(self) -> TraceLog:
        """The finalized log with its context; TraceError if it changed while being read."""
        before = self.status()
        if before.get("state") == "logging":
            raise TraceError("kbench.ko's log is still on: finalize it before reading")
        raw = self.io.read_bytes(f"{TRACE_DIR}/log")
        names = self.names()
        functions = {f.slot: f.name for f in self.functions()}
        after = self.status()
        if after.get("generation") != before.get("generation"):
            raise TraceError("kbench.ko's log was reset while it was being read")
        expected = int(after.get("entries", 0)) * ENTRY_DTYPE.itemsize
        if len(raw) != expected:
            raise TraceError(f"read {len(raw)} bytes of kbench.ko's log, its status says {expected}")
        return TraceLog.from_bytes(
            raw, int(after.get("tsc_khz", 0)), names=names, functions=functions, status=after
        )
