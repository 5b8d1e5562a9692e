"""Parse ``kbench-probe scale`` output and compute the will-it-scale metrics.

Pure functions over the probe's bytes (plus two thin helpers that run the probe).
The format is docs/probe-format.md, section "scale": a JSON header with
``kind: "scale"`` and one row per interval, columns
``elapsed_ns, idle_userhz, total_userhz, ops_task0 .. ops_task{N-1}`` (per-interval
deltas).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from kbench import children
from kbench.contract.vocabulary import HIGHER_IS_BETTER, LOWER_IS_BETTER
from kbench.kinds.scale.testcases import MODES, SUITE
from kbench.native import find_native
from kbench.targets.probe_output import ProbeOutput, ProbeOutputError, parse_probe_output

FIXED_COLUMNS = ("elapsed_ns", "idle_userhz", "total_userhz")



class ScaleOutputError(ProbeOutputError):
    """The probe's output is not a valid ``scale`` run."""


class Metric(NamedTuple):
    """One metric value; unpacks as ``(value, unit, direction)``."""

    value: float
    unit: str
    direction: str


@dataclass(frozen=True)
class ScaleIntervals:
    """Per-interval arrays (one entry per row, in order; ``ops*`` have one column per task).

    ``elapsed_ns`` is when the interval's sample was taken, from the start of the
    tasks; ``seconds`` is the interval's real length (difference of consecutive
    ``elapsed_ns``, the first from 0); ``ops`` the operations each task completed in
    it; ``ops_per_s = ops / seconds``; ``idle_fraction`` the machine's idle share of
    CPU time in it (``/proc/stat``; NaN when unknown); ``steady`` False for warm-up.
    """

    elapsed_ns: np.ndarray
    seconds: np.ndarray
    ops: np.ndarray
    ops_per_s: np.ndarray
    idle_fraction: np.ndarray
    steady: np.ndarray

    def __len__(self) -> int:
        return len(self.elapsed_ns)

    @property
    def total_ops_per_s(self) -> np.ndarray:
        """All tasks together, per interval (ops/s)."""
        total: np.ndarray = self.ops.sum(axis=1) / self.seconds
        return total

    @property
    def per_task_ops_per_s(self) -> np.ndarray:
        """Mean over tasks, per interval: total ops / seconds / tasks (ops/s)."""
        tasks = self.ops.shape[1] if self.ops.ndim == 2 else 1
        return self.total_ops_per_s / tasks

    def select(self, mask: np.ndarray) -> ScaleIntervals:
        return ScaleIntervals(
            elapsed_ns=self.elapsed_ns[mask],
            seconds=self.seconds[mask],
            ops=self.ops[mask],
            ops_per_s=self.ops_per_s[mask],
            idle_fraction=self.idle_fraction[mask],
            steady=self.steady[mask],
        )


@dataclass(frozen=True)
class ScaleResult:
    """A parsed ``kbench-probe scale`` run."""

    header: dict[str, Any]
    testcase: str
    mode: str
    tasks: int
    interval_s: float
    warmup_intervals: int
    interrupted: bool
    warnings: tuple[str, ...]
    per_interval: ScaleIntervals

    @property
    def benchmark(self) -> str:
        return f"{SUITE}.{self.testcase}"

    @property
    def steady(self) -> ScaleIntervals:
        """The intervals after the warm-up."""
        return self.per_interval.select(self.per_interval.steady)

    @property
    def ops_at_stop(self) -> np.ndarray:
        """Each task's cumulative count read after the tasks stopped (>= the sum of its rows)."""
        return np.asarray(self.header.get("ops_at_stop", []), dtype=np.uint64)

    @property
    def per_task_stat(self) -> str:
        """``per_process_ops`` or ``per_thread_ops``, as will-it-scale names it."""
        return "per_thread_ops" if self.mode == "thread" else "per_process_ops"

    def metrics(self) -> dict[str, Metric]:
        """``will-it-scale.<test>.{per_process_ops|per_thread_ops, ops, idle}``.

        - ``per_process_ops``/``per_thread_ops``: mean over steady intervals of
          (total ops in the interval / interval seconds / tasks), ops/s, higher is better;
        - ``ops``: mean over steady intervals of total ops / interval seconds, ops/s;
        - ``idle``: mean idle fraction of the machine over steady intervals (0..1). Lower
          is better: with busy tasks, idle time means tasks waited instead of working.

        Values are NaN when there is no steady interval (e.g. interrupted in warm-up).
        """
        s = self.steady
        prefix = self.benchmark
        per_task = _mean(s.per_task_ops_per_s)
        total = _mean(s.total_ops_per_s)
        idle = s.idle_fraction[~np.isnan(s.idle_fraction)] if len(s) else s.idle_fraction
        return {
            f"{prefix}.{self.per_task_stat}": Metric(per_task, "ops/s", HIGHER_IS_BETTER),
            f"{prefix}.ops": Metric(total, "ops/s", HIGHER_IS_BETTER),
            f"{prefix}.idle": Metric(_mean(idle), "fraction", LOWER_IS_BETTER),
        }


def _mean(a: np.ndarray) -> float:
    return float(np.mean(a)) if len(a) else math.nan


def metric_names(test: str, mode: str) -> tuple[str, str, str]:
    """The metric names a run of ``test`` in ``mode`` produces (per-task, total, idle)."""
    _check_mode(mode)
    stat = "per_thread_ops" if mode == "thread" else "per_process_ops"
    return (f"{SUITE}.{test}.{stat}", f"{SUITE}.{test}.ops", f"{SUITE}.{test}.idle")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")


def scale_probe_args(
    test: str,
    tasks: int,
    mode: str,
    duration_s: float,
    warmup_s: float = 1.0,
    interval_s: float = 1.0,
    *,
    pinning: str | None = None,
    cpu_list: str | None = None,
    directory: str | Path | None = None,
    output: str | Path | None = None,
    counters: bool = False,
    ignore_failure: bool = False,
) -> list[str]:
    """The probe's arguments (after the executable) for one scale run.

    ``pinning`` is ``core`` (probe default, like will-it-scale), ``cpu`` or ``none``;
    ``cpu_list`` (e.g. ``"0-3"``) pins round-robin over those CPUs instead; ``counters``:
    perf events of the tasks over the measured intervals (docs/probe-format.md); ``ignore_failure``:
    failed operations are warnings instead of failing the run.
    """
    _check_mode(mode)
    if int(tasks) < 1:
        raise ValueError(f"tasks must be >= 1, got {tasks}")
    args = [
        "scale", test,
        "--tasks", str(int(tasks)),
        "--mode", mode,
        "--duration", repr(float(duration_s)),
        "--warmup-seconds", repr(float(warmup_s)),
        "--interval", repr(float(interval_s)),
    ]
    if pinning is not None:
        args += ["--pinning", pinning]
    if cpu_list is not None:
        args += ["--cpu-list", cpu_list]
    if directory is not None:
        args += ["--dir", str(directory)]
    if output is not None:
        args += ["--output", str(output)]
    if counters:
        args.append("--counters")
    if ignore_failure:
        args.append("--ignore-failure")
    return args


def parse_scale(data: bytes) -> ScaleResult:
    """Parse ``kbench-probe scale`` output (header line + u64 rows).

    Raises ScaleOutputError when the stream is not a ``scale`` run or its columns do
    not match ``tasks``.
    """
    return scale_from_output(parse_probe_output(data))


def scale_from_output(out: ProbeOutput) -> ScaleResult:
    """A ScaleResult from an already parsed probe output (header + u64 rows)."""
    h = out.header
    if h.get("kind") != "scale":
        raise ScaleOutputError(f"not a scale run (kind={h.get('kind')!r})")
    tasks = int(h["tasks"])
    expected = [*FIXED_COLUMNS, *(f"ops_task{i}" for i in range(tasks))]
    if list(h["columns"]) != expected:
        raise ScaleOutputError(f"scale columns {h['columns']} do not match {tasks} tasks")
    rows = out.rows
    n = rows.shape[0]
    elapsed = rows[:, 0].astype(np.int64)
    edges = np.concatenate(([0], elapsed))
    if n and np.any(np.diff(edges) <= 0):
        raise ScaleOutputError("elapsed_ns is not strictly increasing")
    seconds = np.diff(edges).astype(np.float64) * 1e-9
    ops = rows[:, len(FIXED_COLUMNS):]
    idle_t = rows[:, 1].astype(np.float64)
    total_t = rows[:, 2].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        idle = np.where(total_t > 0, idle_t / total_t, np.nan)
        ops_per_s = ops.astype(np.float64) / seconds[:, None] if n else np.zeros((0, tasks))
    warm = int(h.get("warmup_intervals", 0))
    steady = np.arange(n) >= warm
    return ScaleResult(
        header=h,
        testcase=str(h["testcase"]),
        mode=str(h["mode"]),
        tasks=tasks,
        interval_s=float(h["interval_s"]),
        warmup_intervals=warm,
        interrupted=bool(h.get("interrupted", False)),
        warnings=tuple(h.get("warnings", [])),
        per_interval=ScaleIntervals(
            elapsed_ns=elapsed,
            seconds=seconds,
            ops=ops,
            ops_per_s=ops_per_s,
            idle_fraction=idle,
            steady=steady,
        ),
    )


def run_scale(
    test: str,
    tasks: int,
    mode: str,
    duration_s: float,
    warmup_s: float = 1.0,
    interval_s: float = 1.0,
    *,
    probe: str | Path | None = None,
    timeout: float | None = None,
    **kwargs: Any,
) -> ScaleResult:
    """Run the probe locally and parse its output (exit 0 or 130 accepted)."""
    exe = str(probe or find_native("kbench-probe"))
    args = scale_probe_args(test, tasks, mode, duration_s, warmup_s, interval_s, **kwargs)
    if timeout is None:
        timeout = duration_s + warmup_s + 60
    p = children.run([exe, *args], capture_output=True, timeout=timeout)
    if p.returncode not in (0, 130):
        msg = p.stderr.decode(errors="replace").strip()
        raise ScaleOutputError(f"kbench-probe scale exited {p.returncode}: {msg}")
    output = kwargs.get("output")
    return parse_scale(Path(output).read_bytes() if output is not None else p.stdout)
