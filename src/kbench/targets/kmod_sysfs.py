"""Drive kbench.ko through /sys/kernel/kbench (docs/sysfs-ABI.md), wherever it is loaded.

The same code serves the local kernel (plain file I/O) and a VM guest (through its
agent): both offer the small ``SysfsIO`` interface.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kbench import interrupts
from kbench.contract.benchmark import Benchmark
from kbench.contract.limits import KFUNC
from kbench.contract.measurement import Measurement
from kbench.contract.request import BadRequest, RunRequest
from kbench.contract.spill import SpillWriter
from kbench.targets.base import TargetError
from kbench.targets.key_values import parse_key_values
from kbench.targets.run_bound import UNMEASURED_CALL_S, kfunc_bound

if TYPE_CHECKING:
    import numpy as np

SYSFS_ROOT = "/sys/kernel/kbench"
KMOD_FORMAT = "kbench-kmod/1"
DEFAULT_LOOP_COUNT = 10_000
DEFAULT_WARMUP = 100
CALIBRATION_SAMPLES = 200
CALIBRATION_BOUND_S = 300.0
"""The calibration's 210 calls may take this long (a benchmark of seconds per call)."""
SAMPLE_TO_OVERHEAD_TARGET = 100
"""Auto batch: the smallest power of two making a sample >= 100x the empty region."""
MAX_AUTO_BATCH = 4096
KBENCH_ONLY_PARAMS = frozenset({"parallel"})
"""Parameters this driver handles itself (``parallel``: read ``run_parallel``, not ``run``),
never written to the benchmark's sysfs directory."""


TimingKey = tuple[str, tuple[tuple[str, str], ...], int | None]
"""(benchmark, parameters, CPU): what the time one call takes depends on."""


class SysfsError(TargetError):
    """A sysfs access failed; ``errno`` says why (EINVAL, ERANGE, EINTR, …)."""

    def __init__(self, path: str, err: int, detail: str = ""):
        self.path = path
        self.errno = err
        name = errno.errorcode.get(err, str(err))
        super().__init__(f"{path}: {name} ({os.strerror(err)}){': ' + detail if detail else ''}")


@dataclass(frozen=True)
class LiveSamples:
    """kbench.ko's ``samples_live`` followed while ``run`` is read: what it gains goes to
    ``sink`` as it comes (at least every quarter of a second)."""

    path: str
    sink: Callable[[bytes], None]


class SysfsIO(Protocol):
    """Reads and writes sysfs files of the kernel that has kbench.ko loaded."""

    def read_text(self, path: str, timeout: float | None = None, live: LiveSamples | None = None) -> str:
        """The attribute's text; ``timeout``: a read that runs something, stopped after that
        long; ``live``: a file followed meanwhile."""
        ...

    def read_bytes(self, path: str) -> bytes: ...

    def write_values(self, directory: str, values: Mapping[str, str]) -> None:
        """Write each value to ``directory/name`` in order; stop at the first failure."""
        ...


@dataclass(frozen=True)
class KernelRunStatus:
    """The ``status`` file after a run: the first line and one entry per CPU."""

    summary: dict[str, str]
    cpus: list[dict[str, str]] = field(default_factory=list)

    @classmethod
    def parse(cls, text: str) -> KernelRunStatus:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            raise TargetError("kbench.ko status file is empty")
        cpus = []
        for line in lines[1:]:
            head, _, rest = line.partition(" ")
            entry = parse_key_values(rest)
            entry["cpu"] = head.removeprefix("cpu")
            cpus.append(entry)
        return cls(summary=parse_key_values(lines[0]), cpus=cpus)


@dataclass(frozen=True)
class PreparedRun:
    """A run set up in kbench.ko's sysfs and not started: reading ``path`` runs it."""

    path: str
    loop_count: int
    batch: int
    expected_s: float  # warm-up and recorded loop, at the calibration's median call
    bound_s: float


class KbenchModule:
    """The loaded kbench.ko: run a benchmark and collect its raw samples.

    A benchmark registered at run time is described by ``kbench.kinds.kfunc.loaded``."""

    def __init__(self, io: SysfsIO):
        self.io = io
        self._cycles_per_call: dict[TimingKey, float] = {}  # 95th percentile of a call, last measured
        self._median_per_call: dict[TimingKey, float] = {}  # by the last calibration
        self._tsc_khz: int | None = None

    def tsc_khz(self) -> int:
        """The TSC's rate the module measured at load (read once: it does not change)."""
        if self._tsc_khz is None:
            self._tsc_khz = int(self.io.read_text(f"{SYSFS_ROOT}/tsc_khz"))
        return self._tsc_khz

    def benchmarks(self) -> list[str]:
        return self.io.read_text(f"{SYSFS_ROOT}/benchmarks").split()

    def _settings(self, benchmark: Benchmark, request: RunRequest, batch: int, loop_count: int) -> dict[str, str]:
        if request.duration_s is not None or request.warmup_duration_s is not None:
            raise BadRequest(
                f"{benchmark.name} runs inside the kernel and is count-based: use --samples and a warm-up count"
            )
        settings = {
            name: value for name, value in request.params.items() if name not in KBENCH_ONLY_PARAMS
        }
        if request.params.get("parallel", "0") in ("0", "false", "no") and request.cpu is not None:
            settings["cpu"] = str(request.cpu)
        settings["loop_count"] = str(loop_count)
        settings["warmup"] = str(request.warmup_samples if request.warmup_samples is not None else DEFAULT_WARMUP)
        settings["batch"] = str(batch)
        if request.counters:
            settings["counters"] = "1"
        return {name: _module_bool(value) for name, value in settings.items()}

    def _reset(self, directory: str) -> None:
        # Earlier runs may have left knobs set; reset the common ones to their defaults.
        self.io.write_values(
            directory, {"cpu": "-1", "irqs_off": "0", "preempt_off": "0", "cpus": "all", "counters": "0"}
        )

    def calibrate_batch(self, benchmark: Benchmark, request: RunRequest) -> int:
        """Smallest power of two B with median sample >= 100 x the empty region (<= 4096)."""
        return self._calibration(benchmark, request)[0]

    def _calibration(self, benchmark: Benchmark, request: RunRequest) -> tuple[int, float]:
        """(auto batch, median cycles per call) from CALIBRATION_SAMPLES calls one by one."""
        directory = f"{SYSFS_ROOT}/{benchmark.workload}"
        probe = RunRequest(benchmark=request.benchmark, params=request.params, samples=CALIBRATION_SAMPLES,
                           warmup_samples=10, cpu=request.cpu)
        self._reset(directory)
        self.io.write_values(directory, self._settings(benchmark, probe, 1, CALIBRATION_SAMPLES))
        summary = parse_key_values(
            self.io.read_text(f"{directory}/run", timeout=CALIBRATION_BOUND_S).splitlines()[0]
        )
        per_call = max(int(summary["50th"]), 1)
        overhead = max(int(summary.get("overhead_sample", "1")), 1)
        batch = 1
        while batch * per_call < SAMPLE_TO_OVERHEAD_TARGET * overhead and batch < MAX_AUTO_BATCH:
            batch *= 2
        cycles = float(max(int(summary.get("95th", per_call)), per_call))
        self._cycles_per_call[_timing_key(benchmark, request)] = cycles
        self._median_per_call[_timing_key(benchmark, request)] = float(per_call)
        return batch, cycles

    def prepare_run(self, benchmark: Benchmark, request: RunRequest, seconds: float) -> PreparedRun:
        """Set ``benchmark`` up for a run of about ``seconds`` of recorded loop (as ``request``
        says otherwise: parameters, CPU, batch), without running it: the file whose read
        runs it (another program reads it, e.g. under ``perf record``) and its bound."""
        directory = f"{SYSFS_ROOT}/{benchmark.workload}"
        parallel = request.params.get("parallel", "0") not in ("0", "false", "no")
        warmup = request.warmup_samples if request.warmup_samples is not None else DEFAULT_WARMUP
        batch, cycles_95 = self._calibration(benchmark, request)
        if request.batch is not None:
            batch = int(request.batch)
        median = self._median_per_call[_timing_key(benchmark, request)]
        tsc_hz = self.tsc_khz() * 1000.0
        wanted = int(seconds * tsc_hz / max(batch * median, 1.0))
        loop_count = max(100, min(wanted, KFUNC.max_samples, KFUNC.max_calls // batch - warmup))
        calls = (warmup + loop_count) * batch
        self._reset(directory)
        self.io.write_values(directory, self._settings(benchmark, replace(request, counters=False), batch,
                                                       loop_count))
        return PreparedRun(path=f"{directory}/{'run_parallel' if parallel else 'run'}", loop_count=loop_count,
                           batch=batch, expected_s=calls * median / tsc_hz,
                           bound_s=kfunc_bound(calls, cycles_95, tsc_hz))

    def run(self, benchmark: Benchmark, request: RunRequest, spill: Path | None = None) -> Measurement:
        """Run ``benchmark`` once as ``request`` says and return its raw samples.

        Reading ``run`` (or ``run_parallel``) performs the run in the kernel; the raw
        per-sample cycles come from the binary ``samples`` attribute, and the module's
        own summary line is kept in the header for cross-checking.

        The read of ``run`` is not waited for longer than the run's bound
        (``run_bound.kfunc_bound``), from the time a call takes: measured by the
        calibration that picks an auto batch, else by the last run of the same benchmark
        and parameters on this module, else assumed (``UNMEASURED_CALL_S``). With a given
        batch nothing runs but the run itself (tracing counts every call). Ctrl-C or
        SIGTERM during the run stops it in the kernel; the samples taken so far are
        fetched and the run is marked interrupted (a first one while they are fetched
        marks it too; a second one stops the fetch).

        With ``spill`` (a single-CPU run), the samples reach that host file while the run
        goes on (``samples_live`` followed, docs/sysfs-ABI.md), after a header line written
        first (``kbench.contract.spill``): a run whose end never comes back (an oops, a dead
        guest, its bound, kbench killed) keeps what was copied.
        """
        if request.duration_s is not None or request.warmup_duration_s is not None:
            raise BadRequest(
                f"{benchmark.name} runs inside the kernel and is count-based: use --samples and a warm-up count"
            )
        directory = f"{SYSFS_ROOT}/{benchmark.workload}"
        parallel = request.params.get("parallel", "0") not in ("0", "false", "no")
        batch_auto = request.batch is None
        key = _timing_key(benchmark, request)
        tsc_khz = self.tsc_khz()
        loop_count = request.samples or DEFAULT_LOOP_COUNT
        warmup = request.warmup_samples if request.warmup_samples is not None else DEFAULT_WARMUP
        if batch_auto:
            batch, _ = self._calibration(benchmark, request)
            batch = max(1, min(batch, KFUNC.max_calls // (warmup + loop_count)))  # kbench.ko's work limit
        else:
            batch = int(request.batch or 1)
        cycles_per_call = self._cycles_per_call.get(key, UNMEASURED_CALL_S * tsc_khz * 1000.0)
        bound = kfunc_bound((warmup + loop_count) * batch, cycles_per_call, tsc_khz * 1000.0)
        self._reset(directory)
        self.io.write_values(directory, self._settings(benchmark, request, batch, loop_count))
        last_run = self._last_run(directory)
        run_file = "run_parallel" if parallel else "run"
        interrupted = False
        writer = None
        if spill is not None and not parallel:
            spill_header = self._header(benchmark, request, loop_count, warmup, batch, batch_auto, tsc_khz)
            writer = SpillWriter(spill, {**spill_header, "overhead": {"median_ticks": None, "min_ticks": None}})
        live = None if writer is None else LiveSamples(f"{directory}/samples_live", writer.append)
        try:
            run_text = self.io.read_text(f"{directory}/{run_file}", timeout=bound, live=live)
        except SysfsError as exc:
            if exc.errno == errno.ETIMEDOUT:
                raise TargetError(
                    f"{benchmark.name} did not finish within its bound of {bound:.0f} s "
                    f"({(warmup + loop_count) * batch} calls at about {cycles_per_call:.0f} cycles each); "
                    "it was stopped"
                ) from exc
            if exc.errno != errno.EINTR:
                raise
            interrupted, run_text = True, ""
        except KeyboardInterrupt:
            # The read was interrupted in the kernel (the guest's agent passed the signal
            # on, or the local read got EINTR): fetch what was measured.
            interrupted, run_text = True, ""
        finally:
            if writer is not None:
                writer.close()
        import numpy as np

        lines = run_text.splitlines()
        if parallel:
            lines = [line for line in lines if line.startswith("all ")]
        finished = parse_key_values(lines[0] if lines else "")
        if "95th" in finished:  # the next run of it gets its bound from this one
            self._cycles_per_call[key] = float(max(int(finished["95th"]), 1))
        # The module has every sample now: a first Ctrl-C while they are fetched stops the
        # run, not the fetch (a second one stops it; the spill keeps what was streamed).
        try:
            with interrupts.keep_first() as kept:
                status = KernelRunStatus.parse(self.io.read_text(f"{directory}/status"))
                # Stopped before the kernel began it: the samples there are the last run's, not ours.
                began = last_run is None or status.summary.get("run") != last_run
                raw = self.io.read_bytes(f"{directory}/samples") if began else b""
        except TargetError as exc:
            if interrupted:  # interrupted again, and the guest stopped: the spill has what was taken
                raise interrupts.interruption() from exc
            raise
        interrupted = interrupted or kept.stopped
        # The samples are in this process's memory only from here until the run is stored: a first
        # interrupt while they are checked (a median of millions) and the counters read is noted,
        # not raised, as during the fetch (a second one is raised: the spill keeps what was streamed).
        with interrupts.keep_first() as late:
            ticks = np.frombuffer(raw, dtype="<u8").copy()
            expected = int(status.summary.get("count", ticks.size)) if began else 0
            if ticks.size != expected:
                raise TargetError(f"kbench.ko returned {ticks.size} samples, its status says {expected}")
            columns: dict[str, np.ndarray] = {"ticks": ticks}
            if parallel:
                columns["cpu"] = _cpu_column(status, ticks.size)
            overhead_sample = int(status.summary.get("overhead_sample", "0"))
            warnings = []
            if ticks.size and np.median(ticks) < SAMPLE_TO_OVERHEAD_TARGET * max(overhead_sample, 1):
                ratio = float(np.median(ticks)) / max(overhead_sample, 1)
                warnings.append(
                    f"quantization: the median sample is only {ratio:.0f}x the empty timed region "
                    f"({overhead_sample} cycles); raise --batch for precise per-call figures"
                )
            header: dict[str, Any] = {
                **self._header(benchmark, request, loop_count, warmup, batch, batch_auto, tsc_khz),
                "overhead": {"median_ticks": overhead_sample, "min_ticks": overhead_sample},
                "columns": list(columns),
                "n": int(ticks.size),
                "interrupted": interrupted or status.summary.get("result") == "interrupted",
                "kernel_run": run_text.strip(),
                "kernel_status": status.summary,
                "kernel_cpus": status.cpus,
                "parallel": parallel,
                "warnings": warnings,
            }
            if writer is not None and writer.failed:
                header["warnings"].append(writer.failed)
            if request.counters and began:
                self._read_counters(directory, status, header)
        if late.stopped:
            header["interrupted"] = True
        return Measurement(header=header, columns=columns, interrupted=bool(header["interrupted"]), stderr="")

    def _read_counters(self, directory: str, status: KernelRunStatus, header: dict[str, Any]) -> None:
        """The perf events the run counted (``counter_values``) into ``header["counters"]``;
        a warning when they cannot be read."""
        from kbench.targets.kmod_counters import CounterValuesError, parse_counter_values

        try:
            head, counters = parse_counter_values(self.io.read_text(f"{directory}/counter_values"))
        except (SysfsError, CounterValuesError) as exc:
            header["warnings"].append(f"--counters: kbench.ko's counts could not be read ({exc})")
            return
        if head.get("run") != status.summary.get("run") or counters is None:
            header["warnings"].append("--counters: kbench.ko did not count this run")
            return
        header["counters"] = counters

    def _last_run(self, directory: str) -> str | None:
        """The number of the benchmark's last run (``status``'s ``run``; None from an older kbench.ko)."""
        return KernelRunStatus.parse(self.io.read_text(f"{directory}/status")).summary.get("run")

    @staticmethod
    def _header(benchmark: Benchmark, request: RunRequest, loop_count: int, warmup: int, batch: int,
                batch_auto: bool, tsc_khz: int) -> dict[str, Any]:
        """What a run's header says before it ran (its spill's header has just this)."""
        return {
            "format": KMOD_FORMAT,
            "workload": benchmark.workload,
            "params": dict(request.params),
            "mode": "count",
            "samples_requested": loop_count,
            "warmup": {"samples": warmup},
            "batch": batch,
            "batch_auto": batch_auto,
            "timer": {"name": "tsc (kernel, rdtsc_ordered)", "hz": tsc_khz * 1000, "tsc_khz": tsc_khz},
            "columns": ["ticks"],
        }


def _timing_key(benchmark: Benchmark, request: RunRequest) -> TimingKey:
    """What a call's timing depends on: the benchmark, its parameters, the CPU."""
    return benchmark.workload, tuple(sorted(request.params.items())), request.cpu


def _module_bool(value: str) -> str:
    return {"true": "1", "yes": "1", "false": "0", "no": "0"}.get(value, value)


def _cpu_column(status: KernelRunStatus, total: int) -> np.ndarray:
    import numpy as np

    cpu = np.full(total, -1, dtype=np.int64)
    for entry in status.cpus:
        offset, count = int(entry.get("offset", 0)), int(entry.get("count", 0))
        cpu[offset : offset + count] = int(entry["cpu"])
    return cpu
