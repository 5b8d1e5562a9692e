"""``kbench run --track entries,utilisation``: kernel entries and CPU utilisation of a run.

``tracked(target, tracking)`` wraps any target: a run on it (``RunWrapper.wrap_run``)
turns tracking on, runs the benchmark on the wrapped target, turns it off and stores
what it saw in the measurement's header (``tracking``: the source, the entry summary,
the utilisation and, for probe runs, the entries themselves). The source is picked per target and recorded: kbench.ko's
tracepoint probes in a guest (``kbench.ko``), a tracefs instance on the running kernel
(``tracefs``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kbench.trace.entries import EntryContext, EntrySummary, parse_proc_interrupts, summarize_entries, syscall_number
from kbench.trace.log import TraceLog, trace_log_of
from kbench.trace.utilisation import Utilisation, measured_threads

if TYPE_CHECKING:
    from kbench.contract.benchmark import Benchmark
    from kbench.contract.measurement import Measurement
    from kbench.contract.request import RunRequest
    from kbench.targets.base import Target, TargetInfo
    from kbench.targets.transport import RunKind

TRACKABLE = ("entries", "utilisation")
ENTRY_GROUPS = ("syscalls", "irqs", "softirqs", "vectors", "faults")
GUEST_LOG_ENTRIES = 1 << 21
"""kbench.ko's log is grown to this many entries (64 MiB) for entry tracking."""


def parse_track(text: str) -> tuple[str, ...]:
    """``entries,utilisation`` -> ("entries", "utilisation"); ValueError for anything else."""
    words = tuple(dict.fromkeys(word.strip() for word in text.split(",") if word.strip()))
    unknown = [word for word in words if word not in TRACKABLE]
    if unknown or not words:
        raise ValueError(f"--track takes {' and/or '.join(TRACKABLE)}, comma-separated, not {text!r}")
    return words


def syscall_of_workload(name: str) -> int | None:
    """The syscall a probe workload ``syscall.<test>``'s operation is (``syscall.writev_t1k`` ->
    writev); None for another name (the probe kind's ``operation_syscall``)."""
    if not name.startswith("syscall."):
        return None
    test = name.removeprefix("syscall.")
    return syscall_number(test) if syscall_number(test) is not None else syscall_number(test.split("_")[0])


class Tracker(Protocol):
    source: str

    def start(self) -> None: ...

    def stop(self) -> tuple[TraceLog | None, Utilisation | None, dict[str, int]]: ...

    def close(self) -> None: ...


class KernelTracker:
    """kbench.ko's trace/entries/ in a guest: its tracepoint probes and the shared log buffer."""

    source = "kbench.ko"

    def __init__(self, module: Any, entries: bool, utilisation: bool, cpus: Sequence[int],
                 groups: Sequence[str] = ENTRY_GROUPS):
        from kbench.trace.kernel import KernelTraceLog

        self.groups = groups
        self.module = module
        self.log = KernelTraceLog(module.io)
        self.entries = entries
        self.utilisation = utilisation
        self.cpus = cpus

    def prepare(self) -> None:
        from kbench.trace.kernel import TRACE_DIR, TraceError

        status = self.log.status_if_available()
        if status is None:
            raise TraceError("kbench.ko in this kernel has no trace log: rebuild it")
        self.log.finalize()
        if self.entries and int(status.get("size", 0)) < GUEST_LOG_ENTRIES:
            self.log.set_size(GUEST_LOG_ENTRIES)
        directory = f"{TRACE_DIR}/entries"
        self.module.io.write_values(directory, {
            "groups": ",".join(self.groups) if self.entries else "none",
            "cpus": ",".join(map(str, self.cpus)) if self.cpus else "all",
            "utilisation": "1" if self.utilisation else "0",
        })

    def start(self) -> None:
        self.log.reset()

    def stop(self) -> tuple[TraceLog | None, Utilisation | None, dict[str, int]]:
        self.log.finalize()
        log = self.log.read() if self.entries else None
        return log, self.read_utilisation(), self.lost()

    def read_utilisation(self) -> Utilisation | None:
        from kbench.trace.kernel import TRACE_DIR
        from kbench.trace.utilisation import parse_kernel_threads

        if not self.utilisation:
            return None
        text = self.module.io.read_bytes(f"{TRACE_DIR}/entries/threads").decode(errors="replace")
        return parse_kernel_threads(text, self.module.tsc_khz())

    def lost(self) -> dict[str, int]:
        from kbench.targets.key_values import parse_key_values
        from kbench.trace.kernel import TRACE_DIR

        status = parse_key_values(self.module.io.read_text(f"{TRACE_DIR}/entries/status"))
        return {"syscalls_unpaired": int(status.get("syscalls_lost", 0))}

    def close(self) -> None:
        from kbench.trace.kernel import TRACE_DIR

        self.module.io.write_values(f"{TRACE_DIR}/entries", {"groups": "none", "utilisation": "0"})


class LocalTracker:
    """The running kernel through tracefs (trace.tracefs)."""

    source = "tracefs"

    def __init__(self, entries: bool, utilisation: bool, cpus: Sequence[int], groups: Sequence[str] = ENTRY_GROUPS):
        from kbench.trace.tracefs import TracefsTracker

        self.tracefs = TracefsTracker(groups if entries else (), utilisation, cpus)
        self.entries = entries

    def prepare(self) -> None:
        pass

    def start(self) -> None:
        self.tracefs.start()

    def stop(self) -> tuple[TraceLog | None, Utilisation | None, dict[str, int]]:
        recording = self.tracefs.stop()
        lost = {"dropped": recording.dropped, "syscalls_unpaired": recording.syscalls_unpaired}
        return (recording.log if self.entries else None), recording.utilisation, lost

    def close(self) -> None:
        self.tracefs.close()


@dataclass(frozen=True)
class TrackedTarget:
    """A target whose runs are tracked; everything else passes through."""

    target: Target
    what: tuple[str, ...]
    groups: tuple[str, ...] = ENTRY_GROUPS

    def info(self) -> TargetInfo:
        return self.target.info()

    def sysinfo(self) -> dict[str, Any]:
        return self.target.sysinfo()

    def wrap_run(
        self, benchmark: Benchmark, request: RunRequest, run: Callable[[Target], Measurement], kind: RunKind
    ) -> Measurement:
        """``run`` on the wrapped target, tracked."""
        cpus = (request.cpu,) if request.cpu is not None else ()
        tracker, irq_text = self._tracker(cpus)
        tracker.prepare()
        own_log = kind.in_kernel and isinstance(tracker, KernelTracker)
        try:
            if own_log:
                # kbench.ko's kfunc runs reset and finalize the log themselves (trace.session).
                measurement = run(self.target)
                log = trace_log_of(measurement.header, measurement.columns) if "entries" in self.what else None
                util, lost = tracker.read_utilisation(), tracker.lost()
            else:
                tracker.start()
                try:
                    measurement = run(self.target)
                finally:
                    log, util, lost = tracker.stop()
        finally:
            tracker.close()
        return with_tracking(measurement, benchmark, tracker.source, cpus, log, util, lost, irq_text(),
                             embed_log=not own_log, in_kernel=kind.in_kernel,
                             op_syscall=kind.operation_syscall(benchmark))

    def _tracker(self, cpus: Sequence[int]) -> tuple[Any, Any]:
        from kbench.targets.vm_target import VmTarget

        entries, utilisation = "entries" in self.what, "utilisation" in self.what
        if isinstance(self.target, VmTarget):
            session = self.target.start()
            if self.target.module is None:
                from kbench.targets.base import TargetError

                raise TargetError(f"--track needs kbench.ko in the guest: {self.target.module_error}")

            def guest_irqs() -> str:
                return session.read_file("/proc/interrupts").decode(errors="replace")

            return KernelTracker(self.target.module, entries, utilisation, cpus, self.groups), guest_irqs
        return LocalTracker(entries, utilisation, cpus, self.groups), lambda: Path("/proc/interrupts").read_text()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.target, name)


def tracked(target: Target, what: Sequence[str]) -> Target:
    """``target`` with ``--track`` on (``target`` itself when nothing is tracked)."""
    return TrackedTarget(target, tuple(what)) if what else target


def with_tracking(
    measurement: Measurement, benchmark: Benchmark, source: str, cpus: Sequence[int], log: TraceLog | None,
    util: Utilisation | None, lost: dict[str, int], irq_text: str, embed_log: bool, in_kernel: bool,
    op_syscall: int | None,
) -> Measurement:
    """The measurement with ``tracking`` in its header and the trackers' warnings added
    (``in_kernel``: the benchmark ran in kbench.ko's threads; ``op_syscall``: the system call
    one of its operations is, if one)."""
    threads: set[int] = set()
    if util is not None:
        threads = measured_threads(util, in_kernel=in_kernel)
        util = util.with_measured(threads, cpus or _cpus_of(util, threads))
    data: dict[str, Any] = {"source": source, "cpus": list(cpus), "what": []}
    warnings: list[str] = []
    if log is not None:
        context = EntryContext(
            benchmark=benchmark.name, op_syscall=op_syscall,
            batch=int(measurement.header.get("batch") or 1), threads=frozenset(threads), cpus=tuple(cpus),
            irq_names=parse_proc_interrupts(irq_text), source=source, lost=lost,
        )
        summary = summarize_entries(log, context)
        data["entries"] = summary.to_json()
        data["what"].append("entries")
        warnings += summary.warnings
        if embed_log:
            data["log"] = log.to_embedded()
    if util is not None:
        data["utilisation"] = util.to_json()
        data["what"].append("utilisation")
        warnings += utilisation_warnings(util)
    header = {**measurement.header, "tracking": data,
              "warnings": [*measurement.header.get("warnings", []), *warnings]}
    return dataclasses.replace(measurement, header=header)


def _cpus_of(util: Utilisation, threads: set[int]) -> list[int]:
    """The CPUs the benchmark's threads ran on (an unpinned run)."""
    return sorted({t.cpu for t in util.threads if t.pid in threads})


def utilisation_warnings(util: Utilisation) -> list[str]:
    found = []
    lost = sum(c.lost_threads for c in util.cpus)
    if lost:
        found.append(f"utilisation: {lost} switches of threads kbench.ko's table had no room for; their time "
                     "is counted as others")
    if not util.measured:
        found.append("utilisation: none of the benchmark's threads ran on the tracked CPUs")
    return found


def tracked_log(header: dict[str, Any], columns: dict[str, Any]) -> TraceLog | None:
    """The entries a tracked run stored: in ``tracking`` (probe runs) or the kfunc run's own log."""
    data = header.get("tracking")
    if isinstance(data, dict) and data.get("log"):
        return TraceLog.from_embedded(data["log"])
    return trace_log_of(header, columns)


def tracking_of(header: dict[str, Any]) -> tuple[EntrySummary | None, Utilisation | None]:
    data = header.get("tracking")
    if not isinstance(data, dict):
        return None, None
    entries = EntrySummary.from_json(data["entries"]) if data.get("entries") else None
    util = Utilisation.from_json(data["utilisation"]) if data.get("utilisation") else None
    return entries, util
