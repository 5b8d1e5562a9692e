"""perf stat's CSV as a run's counters: recorded outputs with and without a PMU."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.profile.counters import EVENTS, parse_counters
from kbench.profile.perf_stat import parse_perf_stat, perf_stat_argv

DATA = Path(__file__).resolve().parents[1] / "data" / "counters"


def test_a_vm_without_a_pmu() -> None:
    raw = parse_perf_stat((DATA / "perf-stat-hackbench-vm.csv").read_text(), operations=1)
    assert [e["name"] for e in raw["events"]] == list(EVENTS)
    counters = parse_counters({"counters": raw})
    assert counters is not None
    assert counters.value("task-clock") == pytest.approx(951.34e6)  # msec as perf printed it, in ns
    assert counters.value("context-switches") == 13693
    assert counters.value("page-faults") == 11787
    assert not counters.hardware_supported
    assert counters.to_json()["cycles"]["supported"] is False
    assert "no hardware PMU" in counters.to_json()["cycles"]["reason"]


def test_a_machine_with_a_pmu_and_multiplexed_events() -> None:
    raw = parse_perf_stat((DATA / "perf-stat-pmu.csv").read_text())
    counters = parse_counters({"counters": raw, "n": 1})
    assert counters is not None
    # counted 75% and 50% of the time: scaled back to the counts perf's documentation records
    assert counters.value("cycles") == pytest.approx(5205202243, rel=1e-9)
    assert counters.value("instructions") == pytest.approx(2603501246, rel=1e-9)
    assert counters.derived()["ipc"][0] == pytest.approx(0.50, abs=0.005)  # as perf printed it
    assert counters.derived()["branch-miss-rate"][0] == pytest.approx(1.32, abs=0.005)
    assert counters.event("cycles") is not None and counters.event("cycles").running_pct == pytest.approx(75.0)
    data = counters.to_json()
    assert data["cache-references"]["supported"] is True and data["cache-references"]["value"] is None
    assert data["cache-misses"]["supported"] is False


def test_user_only_counting_and_garbage() -> None:
    raw = parse_perf_stat("0.42,msec,task-clock:u,416752,100.00,0.456,CPUs utilized\n"
                          "<not supported>,,cycles:u,0,100.00,,\n")
    assert raw["scope"] == "user"
    names = {e["name"]: e for e in raw["events"]}
    assert names["task-clock"]["value"] == pytest.approx(420000)
    assert names["page-faults"]["supported"] is False  # perf printed no line for it
    with pytest.raises(ValueError, match="no event"):
        parse_perf_stat("Usage: perf stat [<options>] [<command>]\n")


def test_the_command_line() -> None:
    assert perf_stat_argv("/usr/bin/perf", "/tmp/x.csv", ["hackbench", "-l", "10"], ["task-clock", "cycles"]) == [
        "/usr/bin/perf", "stat", "-x", ",", "-o", "/tmp/x.csv", "-e", "task-clock,cycles", "--",
        "hackbench", "-l", "10"]
