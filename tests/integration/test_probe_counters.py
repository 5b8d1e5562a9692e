"""The real kbench-probe's --counters: perf_event_open around the measured region,
checked against the kernel's other accounting of the same thread (CLOCK_THREAD_CPUTIME_ID,
getrusage) and against the machine's PMU as sysfs lists it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.profile.counters import HARDWARE_EVENTS, parse_counters
from tests.integration.test_probe import parse, run

CORE_PMU = Path("/sys/bus/event_source/devices/cpu")
"""The core PMU's perf device: absent on a VM without a virtual PMU (then no hardware event exists)."""


def _events(header: dict) -> dict[str, dict]:
    return {e["name"]: e for e in header["counters"]["events"]}


def test_task_clock_agrees_with_the_threads_cpu_time(probe: Path) -> None:
    # getppid for about 0.2-0.5 s: long enough that the few microseconds between the usage
    # snapshot and the counters' enable are far below 5%. task-clock may exceed the thread's
    # CPU clock by the steal and interrupt time the scheduler's clock leaves out (a loaded VM:
    # seen up to 2.5% here), hence 5%.
    p, _ = run(probe, "run", "getppid", "--samples", "100000", "--counters")
    assert p.returncode == 0, p.stderr
    header, _ = parse(p.stdout)
    task_clock_s = _events(header)["task-clock"]["value"] * 1e-9
    thread_cpu_s = header["usage"]["thread_cpu_s"]
    assert thread_cpu_s > 0.05
    assert task_clock_s == pytest.approx(thread_cpu_s, rel=0.05)
    counters = parse_counters(header)
    assert counters is not None and counters.operations == header["n"] * header["batch"]


def test_context_switches_are_counted_when_the_workload_sleeps(probe: Path) -> None:
    # futex ping-pong: the measuring thread blocks for its helper's answer; the kernel's rusage
    # of the same thread (read just outside the counters' window) counts the same switches
    p, _ = run(probe, "run", "futex_wake_wait", "--samples", "2000", "--counters")
    assert p.returncode == 0, p.stderr
    header, _ = parse(p.stdout)
    switches = _events(header)["context-switches"]["value"]
    usage = header["usage"]
    by_rusage = usage["voluntary_ctxsw"] + usage["involuntary_ctxsw"]
    assert switches > 0.5 * header["n"] * header["batch"]
    assert 0.95 * by_rusage - 2 <= switches <= by_rusage


def test_a_commands_sleeps_are_counted_through_inheritance(probe: Path) -> None:
    # each execution of `sleep` blocks at least once in the child: the inherited counters see it,
    # the probe thread's own rusage cannot
    p, _ = run(probe, "run", "command", "-p", "cmd=sleep 0.02", "--samples", "5", "--counters")
    assert p.returncode == 0, p.stderr
    header, _ = parse(p.stdout)
    events = _events(header)
    assert events["context-switches"]["value"] >= header["n"]
    assert events["task-clock"]["value"] * 1e-9 >= 0.5 * header["usage"]["children_cpu_s"]


def test_hardware_events_are_supported_exactly_when_the_machine_has_a_pmu(probe: Path) -> None:
    p, _ = run(probe, "run", "getppid", "--samples", "1000", "--counters")
    assert p.returncode == 0, p.stderr
    events = _events(parse(p.stdout)[0])
    for name in HARDWARE_EVENTS:
        if CORE_PMU.exists():
            assert events[name]["supported"] is True, events[name]
        else:
            assert events[name]["supported"] is False and events[name]["errno"] > 0, events[name]
    counters = parse_counters(parse(p.stdout)[0])
    assert counters is not None
    assert (counters.to_json()["ipc"]["supported"] is True) == CORE_PMU.exists()


def test_each_run_of_a_sequence_counts_only_its_own_region(probe: Path) -> None:
    p, _ = run(probe, "sequence", "--", "getppid", "--samples", "60000", "--counters",
               "--", "getppid", "--samples", "20000", "--counters")
    assert p.returncode == 0, p.stderr
    data = p.stdout
    headers = []
    while data:
        header, rows = parse_one(data)
        headers.append(header)
        data = data[data.index(b"\n") + 1 + rows:]
    assert len(headers) == 2
    for header in headers:
        assert _events(header)["task-clock"]["value"] * 1e-9 == pytest.approx(header["usage"]["thread_cpu_s"],
                                                                               rel=0.1, abs=0.002)


def test_without_the_option_nothing_is_counted(probe: Path) -> None:
    p, _ = run(probe, "run", "getppid", "--samples", "1000")
    assert p.returncode == 0, p.stderr
    assert "counters" not in parse(p.stdout)[0]


def parse_one(data: bytes) -> tuple[dict, int]:
    """The first run's header of a concatenated stream, and its body's length in bytes."""
    import json

    header = json.loads(data[: data.index(b"\n")])
    return header, 8 * len(header["columns"]) * header["n"]
