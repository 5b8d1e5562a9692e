"""The probe's ``usage`` object: parsing, derived fractions, disturbance warnings."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kbench.contract.measurement import Measurement
from kbench.engine import warnings as W
from kbench.engine.warnings import run_warnings, usage_warnings
from kbench.sysinfo.usage import MIN_STAT_TICKS, parse_usage, usage_lines


def _machine(busy: float, ticks: int = 200, steal: float = 0.0) -> dict[str, Any]:
    return {"source": "/proc/stat", "user_hz": 100, "cpus": 2, "ticks": ticks, "busy_fraction": busy,
            "steal_fraction": steal, "per_cpu_busy": {"0": busy, "1": busy}}


# Captured on the 2-CPU dev VM: getppid --duration 1 --cpu 0 while
# `taskset -c 0 python -c 'while True: pass'` ran.
SHARED_CPU = {
    "cpu": {"pinned": 0, "start": 0, "end": 0, "migrations": 0},
    "usage": {"wall_s": 1.000002, "thread_cpu_s": 0.493077, "thread_user_s": 0.125337,
              "thread_sys_s": 0.367742, "runqueue_wait_s": 0.511716, "voluntary_ctxsw": 0,
              "involuntary_ctxsw": 131, "minor_faults": 299, "major_faults": 0,
              "process_cpu_s": 0.49309, "children_cpu_s": 0.0, "machine": _machine(1.0, 202)},
}
# The same run alone on an idle CPU.
QUIET = {
    "cpu": {"pinned": 1, "start": 1, "end": 1, "migrations": 0},
    "usage": {"wall_s": 1.0, "thread_cpu_s": 0.9991, "thread_user_s": 0.25, "thread_sys_s": 0.749,
              "runqueue_wait_s": 0.0002, "voluntary_ctxsw": 0, "involuntary_ctxsw": 2,
              "minor_faults": 850, "major_faults": 0, "process_cpu_s": 0.9992, "children_cpu_s": 0.0,
              "machine": _machine(0.52)},
}
# command `sleep 0.05` x5: the measuring thread waits in wait4 by design.
COMMAND_SLEEP = {
    "cpu": {"pinned": None, "start": 0, "end": 0, "migrations": 0},
    "usage": {"wall_s": 0.287793, "thread_cpu_s": 0.000709, "thread_user_s": 0.00067,
              "thread_sys_s": 4e-05, "runqueue_wait_s": 0.0, "voluntary_ctxsw": 10,
              "involuntary_ctxsw": 0, "minor_faults": 0, "major_faults": 0, "process_cpu_s": 0.00071,
              "children_cpu_s": 0.01239, "machine": _machine(0.03, 58)},
}


def disturbed(header: dict[str, Any]) -> list[str]:
    usage = parse_usage(header)
    assert usage is not None
    return [w for w in usage_warnings(usage) if w.startswith("disturbed run")]


def test_parse_and_fractions() -> None:
    usage = parse_usage(SHARED_CPU)
    assert usage is not None
    assert usage.on_cpu_fraction == pytest.approx(0.493, abs=1e-3)
    assert usage.preempted_fraction == pytest.approx(0.512, abs=1e-3)
    assert usage.involuntary_per_s == pytest.approx(131, abs=0.1)
    assert usage.pinned_cpu == 0 and usage.migrations == 0
    assert usage.machine is not None and usage.machine.per_cpu_busy == {0: 1.0, 1: 1.0}
    # 2 CPUs x 1 s fully busy, 0.49 s of it the probe: the rest is other work
    assert usage.outside_busy_fraction == pytest.approx((2.02 - 0.49309) / 2.02, abs=1e-3)


def test_absent_usage_is_none() -> None:
    assert parse_usage({"format": "kbench-probe/1"}) is None
    assert parse_usage({"usage": None}) is None


def test_shared_cpu_is_reported_as_preempted() -> None:
    found = disturbed(SHARED_CPU)
    assert any("waited for a CPU 51%" in w and "on CPU 49%" in w for w in found), found
    assert any("preempted 131 times" in w for w in found), found
    assert any("other work used 76%" in w for w in found), found


def test_quiet_run_has_no_disturbance() -> None:
    assert disturbed(QUIET) == []


def test_waiting_by_design_is_not_preemption() -> None:
    assert disturbed(COMMAND_SLEEP) == []


def test_without_schedstat_off_cpu_counts_only_when_the_thread_never_blocked() -> None:
    no_schedstat = copy.deepcopy(SHARED_CPU)
    no_schedstat["usage"]["runqueue_wait_s"] = None
    assert any("was off CPU without blocking 51%" in w for w in disturbed(no_schedstat))
    command = copy.deepcopy(COMMAND_SLEEP)
    command["usage"]["runqueue_wait_s"] = None
    usage = parse_usage(command)
    assert usage is not None and usage.preempted_fraction is None
    assert disturbed(command) == []


@pytest.mark.parametrize(("wait", "warned"), [(0.099, False), (0.101, True)])
def test_preemption_threshold(wait: float, warned: bool) -> None:
    header = copy.deepcopy(QUIET)
    header["usage"].update(runqueue_wait_s=wait, thread_cpu_s=1.0 - wait)
    assert any("waited for a CPU" in w for w in disturbed(header)) is warned
    assert pytest.approx(0.9) == W.MIN_ON_CPU_FRACTION


@pytest.mark.parametrize(("switches", "wall", "warned"), [(4, 0.1, False), (10, 1.0, False), (11, 1.0, True)])
def test_involuntary_switch_rate_needs_a_minimum_count(switches: int, wall: float, warned: bool) -> None:
    header = copy.deepcopy(QUIET)
    header["usage"].update(involuntary_ctxsw=switches, wall_s=wall, thread_cpu_s=wall)
    assert any("preempted" in w for w in disturbed(header)) is warned


def test_machine_fractions_need_enough_ticks() -> None:
    header = copy.deepcopy(QUIET)
    header["usage"]["machine"] = _machine(1.0, ticks=MIN_STAT_TICKS - 1, steal=0.5)
    assert disturbed(header) == []
    header["usage"]["machine"] = _machine(0.6, ticks=MIN_STAT_TICKS, steal=0.06)
    found = disturbed(header)
    assert any("stole 6%" in w for w in found) and not any("other work" in w for w in found)


def test_major_faults_are_reported() -> None:
    header = copy.deepcopy(QUIET)
    header["usage"]["major_faults"] = 3
    assert any("3 major page faults" in w for w in disturbed(header))


def test_run_warnings_include_usage_warnings() -> None:
    measurement = Measurement(header=SHARED_CPU, columns={}, interrupted=False, stderr="")
    assert any(w.startswith("disturbed run") for w in run_warnings(measurement, None, {}))
    quiet = Measurement(header=QUIET, columns={}, interrupted=False, stderr="")
    assert run_warnings(quiet, None, {}) == []


def test_usage_lines() -> None:
    usage = parse_usage(SHARED_CPU)
    assert usage is not None
    lines = usage_lines(usage)
    assert lines[0].startswith("thread on CPU 49.3% of 1.000 s") and "waited for a CPU 51.2%" in lines[0]
    assert "131 involuntary (131/s)" in lines[1] and "pinned to CPU 0" in lines[1]
    assert "machine busy 100.0% of 2 CPUs" in lines[2] and "0: 100.0%, 1: 100.0%" in lines[2]
    no_machine = copy.deepcopy(SHARED_CPU)
    no_machine["usage"]["machine"] = None
    usage = parse_usage(no_machine)
    assert usage is not None and "not visible" in usage_lines(usage)[2]


def test_a_short_run_says_too_short_to_measure_instead_of_one_tick_fractions() -> None:
    # A 4 ms getppid run: its thread CPU clock (read around the snapshot's own reads) shows
    # 4.02 ms, one CPU saw no tick at all (NaN) and the machine counted 1 tick over 2 CPUs.
    short = copy.deepcopy(QUIET)
    short["usage"].update(wall_s=0.004, thread_cpu_s=0.00402, runqueue_wait_s=0.0)
    short["usage"]["machine"] = {"source": "/proc/stat", "user_hz": 100, "cpus": 2, "ticks": 1,
                                 "busy_fraction": 1.0, "steal_fraction": 0.0,
                                 "per_cpu_busy": {"0": 1.0, "1": float("nan")}}
    usage = parse_usage(short)
    assert usage is not None and usage.on_cpu_fraction == 1.0
    thread, _, machine = usage_lines(usage)
    assert thread.startswith("thread on CPU 100.0% of 0.004 s") and "100.5" not in thread
    assert machine == "machine busy: too short to measure (1 ticks at 100 Hz over 2 CPUs, fewer than 20)"
    assert usage.outside_busy_fraction is None
    tiny = copy.deepcopy(short)
    tiny["usage"].update(wall_s=0.0004, thread_cpu_s=0.00045)
    tiny_usage = parse_usage(tiny)
    assert tiny_usage is not None and tiny_usage.on_cpu_fraction is None
    assert usage_lines(tiny_usage)[0].startswith("thread on CPU: too short to measure in 0.4 ms")


def test_per_cpu_fractions_need_their_own_ticks_and_never_print_a_question_mark() -> None:
    header = copy.deepcopy(QUIET)
    header["usage"]["machine"] = {"source": "/proc/stat", "user_hz": 100, "cpus": 2, "ticks": 30,
                                  "busy_fraction": 0.5, "steal_fraction": 0.0,
                                  "per_cpu_busy": {"0": 1.0, "1": float("nan")}}
    usage = parse_usage(header)
    assert usage is not None
    machine = usage_lines(usage)[2]
    assert machine.startswith("machine busy 50.0% of 2 CPUs") and "per CPU" not in machine and "?" not in machine
    header["usage"]["machine"].update(ticks=200)
    usage = parse_usage(header)
    assert usage is not None
    machine = usage_lines(usage)[2]
    assert "per CPU 0: 100.0%)" in machine and "?" not in machine
