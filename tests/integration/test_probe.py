"""Integration tests of the real kbench-probe binary (native/probe).

The probe is located with kbench.native.find_native("kbench-probe"); for a dev
build set KBENCH_PROBE=/work/main/build/dev/kbench-probe.

Every timing assertion is checked against something the probe did not compute
itself: the wall clock of the test process, a reference C loop compiled here,
the kernel's own accounting (sleep, rusage), or a second timer.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

ALL_WORKLOADS = {
    "getppid", "clock_gettime", "read_devzero", "pread", "write", "writev_t1k",
    "open_close", "stat", "mmap_munmap", "pipe_roundtrip", "futex_wake_wait",
    "sched_yield", "command",
}
# workloads whose operation is a real system call (or several): the empty timed
# region must be far below one operation
SYSCALL_WORKLOADS = sorted(ALL_WORKLOADS - {"clock_gettime", "command"})


def parse(data: bytes) -> tuple[dict, np.ndarray]:
    """Minimal reader of the probe stream (docs/probe-format.md)."""
    nl = data.index(b"\n")
    header = json.loads(data[:nl])
    ncols = len(header["columns"])
    body = data[nl + 1:]
    assert len(body) % (8 * ncols) == 0, "stream is not a whole number of rows"
    rows = np.frombuffer(body, dtype="<u8").reshape(-1, ncols)
    return header, rows


def parse_all(data: bytes) -> list[tuple[dict, np.ndarray]]:
    """Every record of a ``sequence``'s output, one after another."""
    records, offset = [], 0
    while offset < len(data):
        nl = data.index(b"\n", offset)
        header = json.loads(data[offset:nl])
        end = nl + 1 + header["n"] * len(header["columns"]) * 8
        columns = len(header["columns"])
        records.append((header, np.frombuffer(data[nl + 1:end], dtype="<u8").reshape(header["n"], columns)))
        offset = end
    return records


def run(probe: Path, *args: str, timeout: float = 120, **kw) -> tuple[subprocess.CompletedProcess, float]:
    t0 = time.monotonic()
    p = subprocess.run([str(probe), *args], capture_output=True, timeout=timeout, **kw)
    return p, time.monotonic() - t0


def ns_per_op(h: dict, rows: np.ndarray) -> np.ndarray:
    return rows[:, 0] / h["timer"]["hz"] * 1e9 / h["batch"]


def workload_args(name: str, tmp: Path) -> list[str]:
    if name == "command":
        return ["-p", "cmd=true", "--samples", "5", "--warmup-samples", "1"]
    args = ["--samples", "300"]
    if name in {"pread", "write", "writev_t1k", "open_close", "stat"}:
        args += ["-p", f"dir={tmp}"]
    return args


# --------------------------------------------------------------------------
# --list


def test_list_is_json_and_covers_every_workload(probe):
    p, _ = run(probe, "--list")
    assert p.returncode == 0, p.stderr
    listing = json.loads(p.stdout)
    names = {w["name"] for w in listing}
    assert names >= ALL_WORKLOADS
    for w in listing:
        assert w["description"] and w["unit"] == "ns"
        assert w["columns"][0] == "ticks"
        for prm in w["params"]:
            assert set(prm) >= {"name", "type", "default", "description"}
            assert prm["type"] in {"int", "str", "bool"}
            assert isinstance(prm["default"], str)
    by = {w["name"]: w for w in listing}
    assert by["command"]["columns"] == ["ticks", "utime_ns", "stime_ns", "maxrss_kb", "gap_ticks"]
    assert all(w["columns"][-1] == "gap_ticks" for w in listing)
    assert {p["name"] for p in by["writev_t1k"]["params"]} >= {"file_setup", "file_size", "dir"}
    assert {p["name"] for p in by["clock_gettime"]["params"]} == {"clock"}


# --------------------------------------------------------------------------
# every workload


@pytest.mark.parametrize("name", sorted(ALL_WORKLOADS))
def test_workload_runs_and_is_sane(probe, tmp_path, name):
    args = workload_args(name, tmp_path)
    p, wall = run(probe, "run", name, *args)
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    want = int(args[args.index("--samples") + 1])
    assert h["format"] == "kbench-probe/1" and h["workload"] == name
    assert h["n"] == want == len(rows)
    assert (rows[:, 0] > 0).all()
    assert h["overhead"]["pairs"] >= 100_000
    assert 0 < h["overhead"]["min_ticks"] <= h["overhead"]["median_ticks"]
    # the samples cannot have taken longer than the process lived (wall clock
    # of this test process, independent of the probe's timer)
    assert rows[:, 0].sum() / h["timer"]["hz"] <= wall
    if name in SYSCALL_WORKLOADS:
        per_op_ticks = np.median(rows[:, 0]) / h["batch"]
        assert h["overhead"]["median_ticks"] < 0.5 * per_op_ticks
    # files made by set-up are gone
    assert list(tmp_path.iterdir()) == []
    assert h["interrupted"] is False and isinstance(h["warnings"], list)


def test_params_are_echoed_with_defaults(probe, tmp_path):
    p, _ = run(probe, "run", "pread", "--samples", "50", "-p", "size=1k", "-p", f"dir={tmp_path}")
    assert p.returncode == 0, p.stderr
    h, _ = parse(p.stdout)
    assert h["params"]["size"] == "1024"          # suffix resolved
    assert h["params"]["file_setup"] == "small"   # default filled in
    assert h["params"]["file_size"] == "1024"     # auto resolved
    assert h["setup"]["path"].startswith(str(tmp_path))


def test_dd_setup_is_recorded_and_cleaned(probe, tmp_path):
    p, _ = run(probe, "run", "writev_t1k", "--samples", "200", "-p", "file_setup=dd",
               "-p", f"dir={tmp_path}")
    assert p.returncode == 0, p.stderr
    h, _ = parse(p.stdout)
    assert h["params"]["file_size"] == str(10 << 20)
    assert "dd" in h["setup"]["created_by"] and h["setup"]["file_size"] == 10 << 20
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------
# modes


def test_duration_mode_honours_the_duration(probe):
    p, wall = run(probe, "run", "getppid", "--duration", "0.5")
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    assert h["mode"] == "duration" and h["n"] == len(rows) > 0
    assert 0.45 <= h["elapsed_s"] <= 1.5
    assert 0.5 <= wall <= 5.0  # independent: the test's own clock
    busy = rows[:, 0].sum() / h["timer"]["hz"]
    assert 0.3 <= busy <= h["elapsed_s"] + 1e-3


def test_each_sample_has_the_gap_before_it_so_its_start_time_is_known(probe):
    # Duration mode stops at the first sample ending at least the duration after the first
    # sample's start: with gap_ticks, every sample's end is the sum of the ticks and gaps
    # up to it, so exactly the last end reaches the duration and the one before does not.
    p, _ = run(probe, "run", "getppid", "--duration", "0.3")
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    ticks, gaps = rows[:, h["columns"].index("ticks")], rows[:, h["columns"].index("gap_ticks")]
    assert h["columns"][-1] == "gap_ticks" and gaps[0] == 0
    ends = np.cumsum(ticks + gaps, dtype=np.uint64)
    limit = 0.3 * h["timer"]["hz"]
    assert ends[-1] >= limit > ends[-2]
    # the gaps are the loop's own bookkeeping between samples: small next to the samples
    # except where something ran in between (the median gap is under a sample's median)
    assert np.median(gaps) < np.median(ticks)


def test_duration_mode_max_samples_caps(probe):
    p, _ = run(probe, "run", "getppid", "--duration", "5", "--max-samples", "1000")
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    assert h["n"] == len(rows) == 1000
    assert any("max-samples" in w for w in h["warnings"])


def test_batch_auto_reaches_100x_resolution(probe):
    p, _ = run(probe, "run", "clock_gettime", "--samples", "2000")
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    assert h["batch_auto"] is True
    b = h["batch"]
    assert b & (b - 1) == 0, "batch is a power of two"
    med = np.median(rows[:, 0])
    assert med >= 100 * h["timer"]["resolution_ticks"] * 0.9  # noise margin
    assert med >= 50 * h["overhead"]["median_ticks"]
    # and it is the smallest such power of two (half the batch misses the target)
    target = h["batch_calibration"]["target_ticks"]
    assert med / 2 < target * 1.5


def test_fixed_batch(probe):
    p, _ = run(probe, "run", "getppid", "--samples", "100", "--batch", "3")
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    assert h["batch"] == 3 and h["batch_auto"] is False and len(rows) == 100


def test_two_timers_agree(probe):
    """getppid per op with the TSC and with CLOCK_MONOTONIC_RAW: two clocks.

    This VM flips between two speeds for minutes at a time (getppid ~165 or ~210 ns), so
    each timer's best median over up to 8 alternating tries is compared."""
    best = {}
    for attempt in range(8):
        for timer in (("auto", "clock") if attempt % 2 == 0 else ("clock", "auto")):
            p, _ = run(probe, "run", "getppid", "--samples", "5000", "--timer", timer)
            assert p.returncode == 0, p.stderr
            h, rows = parse(p.stdout)
            best[timer] = min(best.get(timer, 1e18), float(np.median(ns_per_op(h, rows))))
        if abs(best["auto"] / best["clock"] - 1) < 0.1:
            break
    assert abs(best["auto"] / best["clock"] - 1) < 0.1, best


def test_pinning(probe):
    p, _ = run(probe, "run", "getppid", "--samples", "1000", "--cpu", "0")
    assert p.returncode == 0, p.stderr
    h, _ = parse(p.stdout)
    assert h["cpu"]["pinned"] == 0 and h["cpu"]["start"] == 0 and h["cpu"]["end"] == 0


def test_pinning_failure_is_a_warning(probe):
    cpu = os.cpu_count() + 7
    p, _ = run(probe, "run", "getppid", "--samples", "100", "--cpu", str(cpu))
    assert p.returncode == 0, p.stderr
    h, _ = parse(p.stdout)
    assert h["cpu"]["pinned"] is None
    assert any("pinning" in w for w in h["warnings"])


def test_output_file(probe, tmp_path):
    out = tmp_path / "s.bin"
    p, _ = run(probe, "run", "sched_yield", "--samples", "100", "--output", str(out))
    assert p.returncode == 0 and p.stdout == b""
    h, rows = parse(out.read_bytes())
    assert h["n"] == len(rows) == 100


def test_progress_lines(probe):
    p, wall = run(probe, "run", "getppid", "--duration", "1.2", "--progress")
    assert p.returncode == 0
    lines = [line for line in p.stderr.decode().splitlines() if line.startswith("progress ")]
    assert 2 <= len(lines) <= wall * 4 + 1
    done = [int(line.split()[1]) for line in lines]
    assert done == sorted(done)
    assert {int(line.split()[2]) for line in lines} == {1200}  # duration mode: ms


# --------------------------------------------------------------------------
# command


def test_command_sleep(probe):
    p, wall = run(probe, "run", "command", "-p", "cmd=sleep 0.05", "--samples", "5",
                  "--warmup-samples", "1")
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    assert h["columns"] == ["ticks", "utime_ns", "stime_ns", "maxrss_kb", "gap_ticks"]
    assert h["batch"] == 1 and rows.shape == (5, 5)
    secs = rows[:, 0] / h["timer"]["hz"]
    # the kernel's sleep is the independent reference (and it checks timer.hz)
    assert (secs >= 0.05).all() and np.median(secs) < 0.08
    assert secs.sum() <= wall
    cpu = (rows[:, 1] + rows[:, 2]) / 1e9
    assert (cpu < secs * 0.5).all()  # sleeping costs little CPU
    assert (rows[:, 3] > 0).all()


def test_command_cpu_time_columns(probe):
    """A CPU-bound shell loop: the probe's user+sys columns match the CPU time the
    kernel reports to this test for the same command (os.wait4), and never exceed
    the sample's wall time."""
    loop = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"
    ref: list[float] = []

    def reference() -> None:
        for _ in range(3):
            pid = os.spawnv(os.P_NOWAIT, "/bin/sh", ["/bin/sh", "-c", loop])
            _, status, ru = os.wait4(pid, 0)
            assert status == 0
            ref.append(ru.ru_utime + ru.ru_stime)

    # The reference before and after the probe's run: the CPU time of the same work moves
    # by up to 2x on a loaded VM within seconds; a unit or column mix-up is 1000x.
    reference()
    p, _ = run(probe, "run", "command", "-p", f"cmd={loop}", "--samples", "3",
               "--warmup-samples", "0")
    reference()
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    secs = rows[:, 0] / h["timer"]["hz"]
    cpu = (rows[:, 1] + rows[:, 2]) / 1e9
    assert 0.5 * min(ref) < np.median(cpu) < 2.0 * max(ref), (cpu, ref)
    assert (cpu <= secs * 1.05 + 0.004).all()  # rusage has 1-4 ms granularity


def test_command_without_shell(probe):
    p, _ = run(probe, "run", "command", "-p", "cmd=true", "-p", "shell=0", "--samples", "3")
    assert p.returncode == 0, p.stderr
    h, _rows = parse(p.stdout)
    assert h["setup"]["argv"] == ["true"]
    assert not [w for w in h["warnings"] if "failed" in w]


def test_a_failed_command_stops_the_run_and_is_never_timed(probe):
    # A shell that fails at its 7th execution (calibration is off: commands run one per sample;
    # warm-up 2): the 4 samples before it are kept, the 5th, which held the failure, is not.
    p, _ = run(probe, "run", "command", "-p", "cmd=echo 'it broke' >&2; exit 3", "--samples", "5")
    assert p.returncode == 4, p.stderr
    h, rows = parse(p.stdout)
    assert h["failure"] == {"count": 0, "before": 1, "stopped": True, "ignored": False, "last": "exit status 3",
                            "exit_status": 3, "stderr": "it broke"}
    assert h["n"] == 0 and rows.shape[0] == 0


def test_a_command_killed_by_a_signal_is_a_failure(probe):
    p, _ = run(probe, "run", "command", "-p", "cmd=kill -9 $$", "--samples", "3", "--warmup-samples", "0")
    assert p.returncode == 4, p.stderr
    h, _ = parse(p.stdout)
    assert h["failure"]["signal"] == 9 and h["failure"]["last"].startswith("killed by signal 9")
    assert h["failure"]["count"] == 1 and h["n"] == 0


def test_the_samples_before_the_first_failure_are_kept(probe, tmp_path):
    # The command fails once a file holds 6 lines: executions 1-5 succeed (2 warm-up, 3 measured).
    marks = tmp_path / "marks"
    cmd = f"echo x >> {marks}; [ $(wc -l < {marks}) -lt 6 ]"
    p, _ = run(probe, "run", "command", "-p", f"cmd={cmd}", "--samples", "10", "--warmup-samples", "2")
    assert p.returncode == 4, p.stderr
    h, rows = parse(p.stdout)
    assert marks.read_text().count("x") == 6  # it stopped at the failure: no 7th execution
    assert h["n"] == 3 and rows.shape[0] == 3
    assert h["failure"]["count"] == 1 and h["failure"]["before"] == 0 and h["failure"]["exit_status"] == 1


def test_ignore_failure_times_every_execution_and_counts_the_failures(probe):
    p, _ = run(probe, "run", "command", "-p", "cmd=exit 3", "--samples", "4", "--warmup-samples", "2",
               "--ignore-failure")
    assert p.returncode == 0, p.stderr
    h, rows = parse(p.stdout)
    assert rows.shape[0] == 4
    assert h["failure"]["count"] == 4 and h["failure"]["before"] == 2 and not h["failure"]["stopped"]
    assert h["failure"]["ignored"] is True and h["failure"]["exit_status"] == 3


def test_a_failing_system_call_stops_the_run_with_its_errno(probe):
    # 64 GiB anonymous mappings on a machine with less memory: mmap() says ENOMEM (overcommit 0 or 2).
    if Path("/proc/sys/vm/overcommit_memory").read_text().strip() == "1":
        pytest.skip("vm.overcommit_memory=1: every mmap() succeeds here")
    p, _ = run(probe, "run", "mmap_munmap", "-p", "size=64g", "--samples", "10")
    assert p.returncode == 4, p.stderr
    h, rows = parse(p.stdout)
    assert h["failure"]["last_errno"] == errno.ENOMEM and h["failure"]["last"] == os.strerror(errno.ENOMEM)
    assert rows.shape[0] == 0


def test_a_failure_stops_a_sequence_at_that_run(probe):
    p, _ = run(probe, "sequence", "--", "command", "-p", "cmd=true", "--samples", "2", "--",
               "command", "-p", "cmd=false", "--samples", "2", "--", "command", "-p", "cmd=true", "--samples", "2")
    assert p.returncode == 4, p.stderr
    records = parse_all(p.stdout)
    assert [h["failure"]["stopped"] for h, _ in records] == [False, True]  # the third run never ran
    assert records[1][0]["failure"]["last"] == "exit status 1"


# --------------------------------------------------------------------------
# interruption


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_stops_at_a_sample_boundary(probe, tmp_path, sig):
    proc = subprocess.Popen(
        [str(probe), "run", "pread", "--duration", "60", "--progress", "-p", f"dir={tmp_path}"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    # wait for the first progress line: the measurement is running
    line = proc.stderr.readline()
    assert line.startswith(b"progress "), line
    assert len(list(tmp_path.iterdir())) == 1  # the workload's file exists
    proc.send_signal(sig)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130
    h, rows = parse(out)
    assert h["interrupted"] is True
    assert h["n"] > 0 and len(rows) == h["n"]
    assert len(out) - out.index(b"\n") - 1 == 8 * h["n"] * len(h["columns"])
    assert h["elapsed_s"] < 30
    assert list(tmp_path.iterdir()) == []  # file removed on interrupt too


def records(data: bytes) -> list[tuple[dict, np.ndarray]]:
    """Every record of a `sequence` output, each read as `parse` reads one."""
    found = []
    while data:
        nl = data.index(b"\n")
        header = json.loads(data[:nl])
        end = nl + 1 + 8 * header["n"] * len(header["columns"])
        found.append(parse(data[:end]))
        data = data[end:]
    return found


def test_sequence_writes_each_run_in_order_from_one_process(probe, tmp_path):
    p, _ = run(probe, "sequence", "--output", str(tmp_path / "out"),
               "--", "getppid", "--samples", "300", "--batch", "4",
               "--", "getppid", "-p", "spin=50", "--samples", "200", "--batch", "4",
               "--", "pread", "-p", f"dir={tmp_path}", "--samples", "100",
               "--", "getppid", "--samples", "300", "--batch", "4")
    assert p.returncode == 0, p.stderr
    found = records((tmp_path / "out").read_bytes())
    assert [(h["workload"], h["params"].get("spin"), h["n"]) for h, _ in found] == [
        ("getppid", "0", 300), ("getppid", "50", 200), ("pread", None, 100), ("getppid", "0", 300)]
    assert all(h["interrupted"] is False and len(rows) == h["n"] for h, rows in found)
    # one process: one TSC calibration, the runs one after another in time
    assert len({h["timer"]["hz"] for h, _ in found}) == 1
    starts = [h["start_time"] for h, _ in found]
    assert starts == sorted(starts)
    # 50 steps of dependent arithmetic per call cost more than none, in the same process
    per_call = [np.median(rows[:, 0]) / h["batch"] for h, rows in found]
    assert per_call[1] > per_call[0] and per_call[1] > per_call[3]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]  # pread's file is gone


def test_sequence_interrupted_keeps_the_finished_runs(probe, tmp_path):
    proc = subprocess.Popen(
        [str(probe), "sequence", "--", "getppid", "--samples", "1000", "--",
         "pread", "-p", f"dir={tmp_path}", "--duration", "60", "--", "getppid", "--samples", "1000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while not list(tmp_path.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert list(tmp_path.iterdir()), "the second run never started"
    time.sleep(1.5)  # past the warm-up (1% of 60 s): measuring
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130
    (first, _), (second, rows) = records(out)
    assert first["workload"] == "getppid" and first["interrupted"] is False and first["n"] == 1000
    assert second["workload"] == "pread" and second["interrupted"] is True and 0 < second["n"] == len(rows)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, needle", [
    (["sequence"], "needs at least one run"),
    (["sequence", "getppid"], "unexpected 'getppid' before the first '--'"),
    (["sequence", "--", "getppid", "--", "--", "getppid"], "run 2 is empty"),
    (["sequence", "--", "getppid", "--output", "x"], "run 1 has --output"),
    (["sequence", "--", "getppid", "--progress"], "--progress applies to run only"),
    (["sequence", "--", "getppid", "--", "getppid", "--timer", "clock"], "the same --timer"),
    (["sequence", "--", "getppid", "--", "nope"], "unknown workload 'nope'"),
])
def test_bad_sequence_exits_2_before_measuring(probe, tmp_path, args, needle):
    p, _ = run(probe, *args, cwd=tmp_path)
    assert p.returncode == 2 and p.stdout == b"", p.stderr
    err = p.stderr.decode().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kbench-probe: error: ") and needle in err[0], err
    assert list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------
# bad input


@pytest.mark.parametrize("args, needle", [
    (["run", "nope"], "unknown workload 'nope' (valid: getppid"),
    (["run", "getppid", "-p", "size=4"], "unknown parameter 'size'"),
    (["run", "read_devzero", "-p", "size=abc"], "not an integer"),
    (["run", "read_devzero", "-p", "size=-1"], "out of range"),
    (["run", "mmap_munmap", "-p", "touch=maybe"], "expected 0/1"),
    (["run", "clock_gettime", "-p", "clock=tai"], "expected one of"),
    (["run", "getppid", "--samples", "10", "--duration", "1"], "mutually exclusive"),
    (["run", "getppid", "--samples", "ten"], "not an integer"),
    (["run", "getppid", "--samples", "0"], "out of range"),
    (["run", "getppid", "--duration", "nan"], "not a number"),
    (["run", "getppid", "--batch", "many"], "not an integer"),
    (["run", "getppid", "--timer", "hpet"], "expected tsc, clock or auto"),
    (["run", "getppid", "--max-samples", "5"], "--duration only"),
    (["run", "getppid", "--frobnicate"], "unknown option"),
    (["run", "command", "--batch", "8"], "--batch must be 1 or auto"),
    (["run", "command", "-p", "cmd="], "cmd is empty"),
    (["run"], "needs a WORKLOAD"),
    (["launch"], "unknown command"),
])
def test_bad_input_exits_2(probe, args, needle):
    p, _ = run(probe, *args)
    assert p.returncode == 2
    assert p.stdout == b""
    err = p.stderr.decode().strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kbench-probe: error: ")
    assert needle in err[0]


def test_setup_failure_exits_3(probe, tmp_path):
    p, _ = run(probe, "run", "write", "-p", f"dir={tmp_path}/missing")
    assert p.returncode == 3 and p.stdout == b""
    assert p.stderr.decode().startswith("kbench-probe: error: write: cannot create")


# --------------------------------------------------------------------------
# accuracy against an independent reference

REFERENCE_LOOP = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
/* 10^6 getppid() calls timed with clock_gettime(CLOCK_MONOTONIC), in 1000
 * chunks of 1000 calls; prints the median chunk's ns per call and the mean. */
#define CHUNK 1000
#define CHUNKS 1000
static double ns(struct timespec a, struct timespec b)
{ return (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec); }
static int cmp(const void *a, const void *b)
{ double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(void)
{
    static double d[CHUNKS];
    volatile long sink = 0;
    struct timespec a, b, t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int c = 0; c < CHUNKS; c++) {
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (int i = 0; i < CHUNK; i++)
            sink += getppid();
        clock_gettime(CLOCK_MONOTONIC, &b);
        d[c] = ns(a, b) / CHUNK;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    qsort(d, CHUNKS, sizeof d[0], cmp);
    printf("%.3f %.3f\n", d[CHUNKS / 2], ns(t0, t1) / ((double)CHUNK * CHUNKS));
    return 0;
}
"""


def test_getppid_matches_a_reference_c_loop(probe, tmp_path):
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("no C compiler for the reference loop")
    src = tmp_path / "ref.c"
    src.write_text(REFERENCE_LOOP)
    exe = tmp_path / "ref"
    subprocess.run([gcc, "-O2", "-o", str(exe), str(src)], check=True)
    # Alternate the two methods; on a shared VM either can be slowed by a busy
    # neighbour, so compare the best (least disturbed) medians of each.
    ref_best = probe_best = float("inf")
    for i in range(20):  # this VM flips between speed modes per process: give both a chance at the fast one
        out = subprocess.run([str(exe)], capture_output=True, check=True, text=True).stdout
        ref_best = min(ref_best, float(out.split()[0]))
        p, _ = run(probe, "run", "getppid", "--samples", "20000")
        assert p.returncode == 0, p.stderr
        h, rows = parse(p.stdout)
        probe_best = min(probe_best, float(np.median(ns_per_op(h, rows))))
        if i >= 1 and abs(probe_best / ref_best - 1) <= 0.10:
            break
    assert abs(probe_best / ref_best - 1) <= 0.10, (probe_best, ref_best)
