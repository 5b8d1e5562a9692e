"""Integration tests of `kbench-probe scale` (the will-it-scale model) and kbench.kinds.scale.

Real runs of the real probe, short (intervals of 0.1-0.5 s).  Invariants are checked
against facts the probe did not compute: the test's own clock, the kernel's CPU-time
and page-fault accounting of the probe (os.wait4 covers its reaped task processes),
the per-operation cost measured by `kbench-probe run`, and the file system.

The machine may be shared: assertions that need an otherwise idle machine skip, with
the reason, when /proc/stat shows it was not.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from kbench.kinds.scale.result import ScaleOutputError, metric_names, parse_scale, scale_probe_args
from kbench.kinds.scale.testcases import list_scale_tests
from kbench.profile.counters import parse_counters
from kbench.targets.probe_output import parse_probe_output

REQUIRED = {
    "getppid1", "brk1", "mmap1", "page_fault1", "page_fault2", "malloc1", "futex1", "pipe1",
    "open1", "read1", "write1", "lseek1", "signal1", "sched_yield", "lock1",
    "futex2", "mmap2", "dup1", "pread3", "read2", "unlink1", "open2",
}
ALL_TESTS = sorted(REQUIRED)


class Run:
    def __init__(self, rc: int, out: bytes, err: str, wall: float, rusage) -> None:
        self.rc, self.out, self.err, self.wall, self.rusage = rc, out, err, wall, rusage

    @property
    def cpu_s(self) -> float:
        return self.rusage.ru_utime + self.rusage.ru_stime

    def result(self):
        return parse_scale(self.out)


def run_probe(probe: Path, args: list[str], timeout: float = 60) -> Run:
    t0 = time.monotonic()
    p = subprocess.run([str(probe), *args], capture_output=True, timeout=timeout)
    return Run(p.returncode, p.stdout, p.stderr.decode(errors="replace"), time.monotonic() - t0, None)


def run_with_rusage(probe: Path, args: list[str], tmp: Path, timeout: float = 60) -> Run:
    """Run the probe and collect its rusage (which includes its reaped task processes)."""
    out_file = tmp / f"out.{time.monotonic_ns()}"
    err_file = tmp / f"err.{time.monotonic_ns()}"
    t0 = time.monotonic()
    with open(out_file, "wb") as fo, open(err_file, "wb") as fe:
        p = subprocess.Popen([str(probe), *args], stdout=fo, stderr=fe)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:  # pragma: no cover
                p.kill()
                raise TimeoutError(args)
            time.sleep(0.01)
        p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    return Run(p.returncode, out_file.read_bytes(), err_file.read_text(), wall, ru)


def scale_args(test: str, tasks: int, mode: str, duration: float, warmup: float, interval: float,
               tmp: Path) -> list[str]:
    return scale_probe_args(test, tasks, mode, duration, warmup, interval, directory=tmp)


def getppid_ns(probe: Path) -> tuple[float, float]:
    """(median, 10th percentile) ns per getppid() from `kbench-probe run getppid`."""
    p = subprocess.run([str(probe), "run", "getppid", "--duration", "0.5"], capture_output=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    o = parse_probe_output(p.stdout)
    ns = o.column("ticks") / o.header["timer"]["hz"] * 1e9 / o.header["batch"]
    return float(np.median(ns)), float(np.percentile(ns, 10))


# --------------------------------------------------------------------------
# --list-scale


def test_list_scale_describes_every_testcase(probe):
    p = subprocess.run([str(probe), "--list-scale"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    entries = json.loads(p.stdout)
    names = {e["name"] for e in entries}
    assert names >= REQUIRED
    assert len(entries) == len(names)
    assert len(entries) >= 10
    for e in entries:
        assert e["description"] and e["op"]
        assert e["unit"] == "ops/s" and e["direction"] == "higher"
        params = {q["name"]: q for q in e["params"]}
        assert params["nr_task"]["type"] == "int" and params["nr_task"]["min"] == 1
        assert params["mode"]["choices"] == ["process", "thread"]
    same = subprocess.run([str(probe), "scale", "--list-scale"], capture_output=True, text=True)
    assert json.loads(same.stdout) == entries
    assert [t.name for t in list_scale_tests(probe)] == [e["name"] for e in entries]


# --------------------------------------------------------------------------
# real runs: 1 and 2 tasks, process and thread mode


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("tasks", [1, 2])
def test_getppid1_run_invariants(probe, tmp_path, mode, tasks):
    interval, duration, warmup = 0.5, 2.0, 0.5
    _, p10_ns = getppid_ns(probe)
    run = run_with_rusage(probe, scale_args("getppid1", tasks, mode, duration, warmup, interval,
                                            tmp_path), tmp_path)
    assert run.rc == 0, run.err
    r = run.result()
    h = r.header
    assert (h["kind"], h["testcase"], h["mode"], h["tasks"]) == ("scale", "getppid1", mode, tasks)
    assert h["columns"] == ["elapsed_ns", "idle_userhz", "total_userhz",
                            *(f"ops_task{i}" for i in range(tasks))]
    assert not r.interrupted and r.warmup_intervals == 1

    # number of intervals = warm-up + duration / interval, each sampled at or after
    # its deadline and not absurdly late; the whole run fits in the test's wall time
    n = len(r.per_interval)
    assert n == 1 + round(duration / interval)
    el = r.per_interval.elapsed_ns / 1e9
    deadlines = interval * np.arange(1, n + 1)
    assert np.all(el >= deadlines - 1e-6)
    assert np.all(el - deadlines < 0.25), el
    assert el[-1] < run.wall
    assert list(r.per_interval.steady) == [False] + [True] * (n - 1)

    # every task made progress; rows are deltas whose sum is each task's cumulative
    # count at the last sample, a little below the count read after the stop
    ops = r.per_interval.ops.astype(np.int64)
    assert ops.shape == (n, tasks)
    cumulative = ops.sum(axis=0)
    assert np.all(cumulative > 0)
    at_stop = r.ops_at_stop.astype(np.int64)
    assert np.all(at_stop >= cumulative)
    assert np.all(at_stop - cumulative <= ops.max(axis=0)), (at_stop, cumulative)

    # the counts are consistent with elapsed time and with the CPU time the kernel
    # charged to the probe and its tasks: each op costs at least about the 10th
    # percentile of `run getppid`, and the tasks cannot run longer than the wall time
    assert run.cpu_s <= tasks * run.wall + 0.5
    assert at_stop.sum() * p10_ns * 1e-9 <= run.cpu_s * 1.3, (at_stop.sum(), p10_ns, run.cpu_s)
    rate = cumulative / el[-1]
    assert np.all(rate < 1e9 / (0.5 * p10_ns))  # no task faster than twice the best single call

    # per-interval ops/s and the metric are the same numbers seen two ways
    s = r.steady
    np.testing.assert_allclose(s.ops_per_s, s.ops / s.seconds[:, None])
    m = r.metrics()
    stat = "per_thread_ops" if mode == "thread" else "per_process_ops"
    value, unit, direction = m[f"will-it-scale.getppid1.{stat}"]
    assert (unit, direction) == ("ops/s", "higher")
    assert value == pytest.approx(np.mean(s.ops.sum(axis=1) / s.seconds / tasks))
    assert m["will-it-scale.getppid1.ops"].value == pytest.approx(value * tasks)
    assert set(m) == set(metric_names("getppid1", mode))

    # idle fraction from /proc/stat, per interval, in [0, 1]
    idle = r.per_interval.idle_fraction
    assert not np.any(np.isnan(idle))
    assert np.all((idle >= 0) & (idle <= 1))
    assert 0 <= m["will-it-scale.getppid1.idle"].value <= 1
    assert h["user_hz"] > 0
    # /proc/stat's total time over an interval is about CPUs x interval
    total_s = parse_probe_output(run.out).column("total_userhz") / h["user_hz"]
    ncpu = os.cpu_count() or 1
    assert np.all(total_s <= ncpu * r.per_interval.seconds * 1.2 + 0.05)


def test_idle_is_lower_with_two_busy_tasks(probe, tmp_path):
    ncpu = len(os.sched_getaffinity(0))
    if ncpu != 2:
        pytest.skip(f"written for a 2-CPU machine, this one has {ncpu}")
    idle = {}
    for tasks in (1, 2):
        run = run_probe(probe, scale_args("getppid1", tasks, "process", 1.5, 0.5, 0.5, tmp_path))
        assert run.rc == 0, run.err
        idle[tasks] = run.result().metrics()["will-it-scale.getppid1.idle"].value
    if idle[1] < 0.3:
        pytest.skip(f"the machine is busy with other work (idle {idle[1]:.2f} with one task on "
                    "two CPUs): the comparison needs an otherwise idle machine")
    assert idle[2] < idle[1] - 0.2, idle
    assert idle[2] < 0.2, idle


@pytest.mark.parametrize("mode,tasks", [("process", 1), ("thread", 2)])
def test_page_fault1_ops_are_pages_faulted(probe, tmp_path, mode, tasks):
    run = run_with_rusage(probe, scale_args("page_fault1", tasks, mode, 1.0, 0.5, 0.5, tmp_path),
                          tmp_path)
    assert run.rc == 0, run.err
    r = run.result()
    thp = r.header["setup"]["transparent_hugepage"]
    counted = int(r.ops_at_stop.astype(np.int64).sum())
    assert counted > 0
    if "[always]" in thp:
        pytest.skip(f"transparent huge pages are always on ({thp}): one fault maps 2 MiB")
    # every counted op is one page written for the first time in a fresh private
    # mapping: one minor fault each, as the kernel counts them (os.wait4 includes the
    # probe's task processes); the rest is the probe's own start-up
    minflt = run.rusage.ru_minflt
    assert counted <= minflt <= counted + 5000 + 200 * tasks, (counted, minflt)
    assert r.header["op"].startswith("one page")


def test_getppid1_agrees_with_run_getppid(probe, tmp_path):
    """per_process_ops on 1 task ~ 1e9 / (ns per getppid from `kbench-probe run`)."""
    before, _ = getppid_ns(probe)
    run = run_probe(probe, scale_args("getppid1", 1, "process", 3.0, 0.5, 0.5, tmp_path))
    after, _ = getppid_ns(probe)
    assert run.rc == 0, run.err
    r = run.result()
    ops = r.metrics()["will-it-scale.getppid1.per_process_ops"].value
    expected = 1e9 / ((before + after) / 2)
    ratio = ops / expected
    idle = r.metrics()["will-it-scale.getppid1.idle"].value
    if abs(ratio - 1) > 0.25 and idle < 0.3:
        pytest.skip(f"ratio {ratio:.2f} on a busy machine (idle {idle:.2f} with one task on "
                    f"{os.cpu_count()} CPUs): the agreement needs an otherwise idle machine")
    assert abs(ratio - 1) <= 0.25, (ops, expected, before, after)


@pytest.mark.parametrize("mode", ["process", "thread"])
@pytest.mark.parametrize("test", ALL_TESTS)
def test_every_testcase_runs_briefly(probe, tmp_path, test, mode):
    run = run_probe(probe, scale_args(test, 2, mode, 0.3, 0.0, 0.1, tmp_path))
    assert run.rc == 0, run.err
    r = run.result()
    assert r.testcase == test and r.tasks == 2 and r.warmup_intervals == 0
    assert len(r.per_interval) == 3
    assert np.all(r.ops_at_stop > 0), r.ops_at_stop
    assert r.header["errors"] == 0, r.warnings
    assert not any("failed" in w or "abnormally" in w for w in r.warnings), r.warnings
    assert list(tmp_path.iterdir()) == []  # per-task files are gone
    assert all(len(c) for c in r.header["pinning"]["task_cpus"])


# --------------------------------------------------------------------------
# pinning


def test_pinning_round_robin_and_cpu_list(probe, tmp_path):
    cpus = sorted(os.sched_getaffinity(0))
    r = run_probe(probe, scale_args("getppid1", 3, "thread", 0.2, 0, 0.1, tmp_path)).result()
    pin = r.header["pinning"]
    assert pin["policy"] == "core" and len(pin["task_cpus"]) == 3
    # task i on unit i mod units; with one CPU per core these are the CPUs in order
    units = pin["units"]
    assert pin["task_cpus"][0] == pin["task_cpus"][units % 3] if units < 3 else True
    r = run_probe(probe, [*scale_args("getppid1", 2, "process", 0.2, 0, 0.1, tmp_path),
                          "--cpu-list", str(cpus[-1])]).result()
    assert r.header["pinning"]["policy"] == "cpu-list"
    assert r.header["pinning"]["task_cpus"] == [str(cpus[-1])] * 2
    assert r.header["pinning"]["cpu_at_start"] == [cpus[-1]] * 2
    r = run_probe(probe, [*scale_args("getppid1", 1, "process", 0.2, 0, 0.1, tmp_path),
                          "--pinning", "none"]).result()
    assert r.header["pinning"]["task_cpus"] == [None]


# --------------------------------------------------------------------------
# SIGINT and bad input


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_sigint_keeps_samples_and_cleans_up(probe, tmp_path, mode):
    out = tmp_path / "out.bin"
    files = tmp_path / "files"
    files.mkdir()
    args = [*scale_probe_args("open1", 2, mode, 60, 0, 0.2, directory=files), "--output", str(out)]
    p = subprocess.Popen([str(probe), *args], stderr=subprocess.PIPE)
    time.sleep(1.3)
    children = []
    if mode == "process":
        kids = Path(f"/proc/{p.pid}/task/{p.pid}/children")
        children = [int(x) for x in kids.read_text().split()] if kids.exists() else []
        assert len(children) == 2
        assert len(list(files.iterdir())) == 2  # open1's per-task files exist while running
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 130, err
    r = parse_scale(out.read_bytes())
    assert r.interrupted
    assert 3 <= len(r.per_interval) <= 10  # ~1.3 s of 0.2 s intervals, not 300
    assert np.all(r.per_interval.ops.sum(axis=0) > 0)
    assert list(files.iterdir()) == []
    for pid in children:  # the tasks were killed and reaped
        assert not Path(f"/proc/{pid}").exists()


@pytest.mark.parametrize(
    "args,message",
    [
        (["scale", "nosuchtest"], "unknown scale testcase 'nosuchtest' (valid: getppid1,"),
        (["scale", "getppid1", "--tasks", "0"], "--tasks 0: out of range"),
        (["scale", "getppid1", "--mode", "fork"], "--mode fork: expected process or thread"),
        (["scale", "getppid1", "--duration", "0.1", "--interval", "1"], "shorter than one --interval"),
        (["scale", "getppid1", "--pinning", "smt"], "--pinning smt: expected core, cpu or none"),
        (["scale", "getppid1", "--cpu-list", "0-"], "--cpu-list 0-: expected CPU numbers"),
        (["scale", "getppid1", "--bogus"], "unknown option '--bogus'"),
        (["scale"], "scale needs a TESTCASE"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(probe, args, message):
    p = subprocess.run([str(probe), *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2
    assert p.stdout == ""
    assert p.stderr.startswith("kbench-probe: error: ") and message in p.stderr, p.stderr
    if "nosuchtest" in args:
        for name in REQUIRED:
            assert name in p.stderr


# --------------------------------------------------------------------------
# the Python API


def test_python_api_args_and_errors(probe, tmp_path):
    assert scale_probe_args("mmap1", 4, "thread", 10, 2) == [
        "scale", "mmap1", "--tasks", "4", "--mode", "thread", "--duration", "10.0",
        "--warmup-seconds", "2.0", "--interval", "1.0"]
    with pytest.raises(ValueError, match="mode"):
        scale_probe_args("mmap1", 1, "fork", 1, 0)
    with pytest.raises(ValueError, match="tasks"):
        scale_probe_args("mmap1", 0, "process", 1, 0)
    assert metric_names("brk1", "thread")[0] == "will-it-scale.brk1.per_thread_ops"
    runout = subprocess.run([str(probe), "run", "getppid", "--samples", "10"], capture_output=True)
    with pytest.raises(ScaleOutputError, match="not a scale run"):
        parse_scale(runout.stdout)


# --------------------------------------------------------------------------
# --counters: perf events of every task over the measured intervals


@pytest.mark.parametrize("mode", ["process", "thread"])
def test_counters_count_every_task_over_the_measured_intervals(probe, tmp_path, mode):
    # page_fault1: an operation writes one byte of a page of a fresh private anonymous mapping, which
    # the kernel maps on that first write: one page fault per operation (without transparent huge
    # pages, which the header says). The events are opened before the tasks start (inherited), enabled
    # when the warm-up ends, disabled after the last interval: the faults and the operations cover the
    # same stretch, up to the microseconds between reading the tasks' counts and the prctl.
    args = [*scale_args("page_fault1", 2, mode, 0.6, 0.4, 0.2, tmp_path), "--counters"]
    r = run_probe(probe, args)
    assert r.rc == 0, r.err
    result = r.result()
    counters = parse_counters(result.header)
    assert counters is not None and result.header["counters"]["inherit"] is True
    measured = int(result.steady.ops.sum())
    assert counters.operations == measured > 0
    if "[always]" not in result.header["setup"]["transparent_hugepage"]:
        assert counters.per_op("page-faults") == pytest.approx(1.0, rel=0.02)
    task_clock_s = (counters.value("task-clock") or 0) * 1e-9
    # two tasks and the (sleeping) harness cannot use more CPU than 3 CPUs over the measured stretch
    measured_s = float(result.steady.seconds.sum())
    assert 0 < task_clock_s <= 3 * measured_s * 1.05


def test_without_counters_the_header_has_none(probe, tmp_path):
    r = run_probe(probe, scale_args("getppid1", 1, "process", 0.2, 0.0, 0.1, tmp_path))
    assert r.rc == 0, r.err
    assert "counters" not in r.result().header


def _task_pids(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children]


def _open_files(task: int) -> set[str]:
    """The files a task holds; a task or a descriptor gone between listing and reading is skipped."""
    names: set[str] = set()
    try:
        fds = list(Path(f"/proc/{task}/fd").iterdir())
    except FileNotFoundError:
        return names
    for fd in fds:
        try:
            names.add(os.readlink(fd))
        except FileNotFoundError:
            continue
    return names


@pytest.mark.parametrize("test,shared", [("read2", True), ("pread3", True), ("dup1", False), ("mmap2", False)])
def test_shared_file_testcases_share_one_file(probe, tmp_path, test, shared):
    """read2 and pread3 read one file all tasks share (the kernel's /proc/PID/fd says which file each
    task holds); dup1 and mmap2 give every task its own."""
    p = subprocess.Popen([str(probe), *scale_args(test, 2, "process", 1.5, 0.0, 0.5, tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        held: dict[int, set[str]] = {}
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(held) < 2:
            time.sleep(0.2)
            for task in _task_pids(p.pid):
                names = _open_files(task)
                mine = {name for name in names if f"scale.{test}" in name}
                if mine:
                    held[task] = mine
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 0, err
    assert len(held) == 2, held
    files = [next(iter(names)) for names in held.values()]
    assert all(len(names) == 1 for names in held.values()), held
    if shared:
        assert files[0] == files[1] and files[0].endswith(f".scale.{test}.0"), files
    else:
        assert files[0] != files[1], files


def test_open2_uses_a_directory_per_task(probe, tmp_path):
    p = subprocess.Popen([str(probe), *scale_args("open2", 2, "thread", 1.5, 0.0, 0.5, tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.8)
        during = sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*"))
        _, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert p.returncode == 0, err
    dirs = [name for name in during if name.endswith(".d")]
    assert len(dirs) == 2 and all(f"{d}/f" in during for d in dirs), during
    assert list(tmp_path.iterdir()) == []
