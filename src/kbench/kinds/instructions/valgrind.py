"""Instructions counted by valgrind (Debian's), on this machine: user space only.

valgrind runs a program on a synthetic CPU and counts every instruction its own code executes;
a program that does the same work counts the same every time, whatever else the machine does.
A command's executions run under cachegrind (its cache simulation off: the count alone, about
10× slower than natively); a probe workload runs under callgrind, its collection switched on
only around each measured sample's operations (``kbench-probe --mark``: client requests), so
that calibration, warm-up and the probe's own bookkeeping are not counted. valgrind sees no
kernel: a system call's own instructions are not counted, only the user-space code around it.
"""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import replace
from functools import cache
from pathlib import Path

from kbench import children
from kbench.contract.benchmark import Benchmark
from kbench.contract.measurement import Measurement
from kbench.contract.request import RunRequest
from kbench.kinds.instructions.command_line import CommandLine, command_line
from kbench.kinds.instructions.measurement import counted_measurement
from kbench.kinds.instructions.source import VALGRIND, CountSource
from kbench.native import find_native
from kbench.targets.base import ExecutionFailed, TargetError
from kbench.targets.probe_output import ProbeOutputError, parse_probe_output

VALGRIND_VARIES = ("valgrind counts exactly: counts differ only when the program itself takes another path "
                   "(time, randomness, the environment, threads, what it reads)")
_SUMMARY = re.compile(rb"^summary:\s+(\d+)", re.MULTILINE)
_TOTALS = re.compile(rb"^totals:\s+(\d+)", re.MULTILINE)
PROBE_OVERHEAD_PAIRS = 100  # the empty regions are not counted: a few suffice


class ValgrindMissing(TargetError):
    """valgrind is not installed here."""


@cache
def valgrind_version() -> str:
    """``valgrind-3.19.0``, or ValgrindMissing."""
    try:
        done = children.run(["valgrind", "--version"], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise ValgrindMissing("valgrind is not installed: install Debian's valgrind (scripts/install-deps.sh does) "
                              "to count instructions on a machine without a PMU") from None
    return done.stdout.strip() or "valgrind"


def _source(tool: str, region: str) -> CountSource:
    return CountSource(VALGRIND, f"{valgrind_version()} ({tool})", "user", region, VALGRIND_VARIES)


def _failure(cmd: str, returncode: int, stderr: Path) -> ExecutionFailed:
    """A counted execution that failed: how, and the last line it wrote to its standard error."""
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
    tail = [line for line in stderr.read_text(errors="replace").splitlines() if line.strip()]
    return ExecutionFailed(f"command {cmd!r}", how, tail[-1][:300] if tail else "")


def cachegrind_total(directory: Path, prefix: str) -> int:
    """The instructions of every process a counted execution ran (its cachegrind files' summaries)."""
    total, found = 0, False
    for path in sorted(directory.glob(f"{prefix}.*")):
        match = _SUMMARY.search(path.read_bytes())
        if match:
            total += int(match.group(1))
            found = True
    if not found:
        raise TargetError(f"cachegrind wrote no summary in {directory} ({prefix}.*)")
    return total


def command_counts(benchmark: Benchmark, request: RunRequest, executions: int, cwd: Path | None) -> Measurement:
    """``executions`` executions of a command under cachegrind, one value each, and one native
    execution first for the slowdown."""
    cmd = request.params.get("cmd", "true")
    with children.scratch_dir("kbench-icount-") as scratch:
        line = command_line(request.params, cwd, scratch)
        native_s = _native_seconds(line, cwd)
        values: list[int] = []
        counted_s: list[float] = []
        for index in range(executions):
            log = scratch / f"valgrind.{index}.log"
            argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--log-file={log}",
                    f"--cachegrind-out-file={scratch}/counts.{index}.%p",
                    *(["--trace-children=yes"] if line.shell else []), *line.argv]
            stderr = scratch / f"stderr.{index}"
            started = time.monotonic()
            with open(stderr, "wb") as errors:
                done = children.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errors, cwd=cwd)
            counted_s.append(time.monotonic() - started)
            if done.returncode != 0 and not request.ignore_failure:
                raise _failure(cmd, done.returncode, stderr)
            values.append(cachegrind_total(scratch, f"counts.{index}"))
    region = ("one execution of /bin/sh -c and what it ran" if line.shell
              else "one execution of the program, run as <scratch>/prog (one name for every program)")
    return counted_measurement(_source("cachegrind, --cache-sim=no", region), workload=benchmark.workload,
                               params=request.params, batch=1, user=values, kernel=None,
                               details={"slowdown": _slowdown(counted_s, native_s)})


def _native_seconds(line: CommandLine, cwd: Path | None) -> float:
    started = time.monotonic()
    children.run(list(line.argv), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 cwd=cwd)
    return time.monotonic() - started


def _slowdown(counted_s: list[float], native_s: float) -> dict[str, float | None]:
    import numpy as np

    counted = float(np.median(counted_s)) if counted_s else 0.0
    return {"counted_s": round(counted, 4), "native_s": round(native_s, 4),
            "factor": round(counted / native_s, 1) if native_s > 0 else None}


def probe_counts(benchmark: Benchmark, request: RunRequest, cwd: Path | None) -> Measurement:
    """A probe workload's run under callgrind, collecting only its measured samples' operations
    (``--mark``): one value, the instructions of ``n × batch`` operations."""
    probe = find_native("kbench-probe")
    counting = replace(request, overhead_pairs=PROBE_OVERHEAD_PAIRS, timer="clock", counters=False)
    with children.scratch_dir("kbench-icount-") as scratch:
        out, log, counts = scratch / "samples.bin", scratch / "valgrind.log", scratch / "callgrind.out"
        args = counting.probe_args(benchmark.workload)
        argv = ["valgrind", "--tool=callgrind", "--collect-atstart=no", f"--callgrind-out-file={counts}",
                f"--log-file={log}", str(probe), args[0], args[1], "--output", str(out), "--mark", *args[2:]]
        started = time.monotonic()
        done = children.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=cwd)
        elapsed = time.monotonic() - started
        try:
            output = parse_probe_output(out.read_bytes()) if out.exists() else None
        except ProbeOutputError:
            output = None
        if output is None or done.returncode not in (0, 4):
            said = done.stderr.decode(errors="replace").strip() if done.stderr else ""
            raise TargetError(f"{benchmark.name} under callgrind failed (exit {done.returncode}): {said[-300:]}")
        header = output.header
        if (header.get("failure") or {}).get("stopped"):
            from kbench.targets.probe_measurement import execution_failed

            raise execution_failed(header)
        if not (header.get("marks") or {}).get("callgrind"):
            raise TargetError("kbench-probe was built without valgrind's header (valgrind/callgrind.h): install "
                              "valgrind and rebuild it (make native) to count a workload's instructions")
        data = counts.read_bytes()
        match = _SUMMARY.search(data) or _TOTALS.search(data)
        if match is None:
            raise TargetError(f"callgrind wrote no summary for {benchmark.name}")
    n = int(header.get("n") or 0)
    batch = int(header.get("batch") or 1)
    timed = header.get("elapsed_s")
    return counted_measurement(
        _source("callgrind, collecting the measured samples' operations",
                f"the run's {n} measured samples of {batch} operations"),
        workload=benchmark.workload, params=request.params, batch=max(n * batch, 1), user=[int(match.group(1))],
        kernel=None, interrupted=bool(header.get("interrupted")),
        details={"probe_samples": n, "probe_batch": batch, "counted_s": round(elapsed, 3), "probe_elapsed_s": timed})
