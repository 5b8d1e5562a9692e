"""perf stat's CSV as a run's counters: recorded outputs with and without a PMU."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.profile.counters import EVENTS, parse_counters
from kbench.profile.perf_stat import parse_perf_stat, perf_stat_argv, perf_stat_csv

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
    # counted 75% and 50% of the time: perf printed them scaled, and they read as perf printed them
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


def test_a_multiplexed_count_is_kept_as_counted() -> None:
    raw = parse_perf_stat((DATA / "perf-stat-pmu.csv").read_text())
    cycles = next(e for e in raw["events"] if e["name"] == "cycles")
    # perf printed 5205202243 for 75% of the time: 3903901682.25 were counted in the time it ran
    assert cycles["value"] == pytest.approx(5205202243 * 0.75)
    assert cycles["running_ns"] / cycles["enabled_ns"] == pytest.approx(0.75)


@pytest.mark.parametrize("name", ["perf-stat-hackbench-vm.csv", "perf-stat-pmu.csv"])
def test_written_back_as_perf_stat_csv_reads_the_same(name: str) -> None:
    original = parse_counters({"counters": parse_perf_stat((DATA / name).read_text()), "n": 1})
    assert original is not None
    text = perf_stat_csv(original, ["kbench run 1"])
    assert text.startswith("# kbench run 1\n")
    again = parse_counters({"counters": parse_perf_stat(text), "n": 1})
    assert again is not None
    for before, after in zip(original.events, again.events, strict=True):
        assert (after.name, after.supported) == (before.name, before.supported)
        assert after.value == (None if before.value is None else pytest.approx(before.value, rel=1e-12))
        assert after.running_pct == (None if before.running_pct is None else pytest.approx(before.running_pct,
                                                                                            abs=0.005))
    # the lines are perf's own: the file's event lines, metric columns aside, come back (task-clock's
    # msec with 6 decimals, as perf 5 printed them; perf 6 prints 2)
    def rows(lines: list[str]) -> list[list[object]]:
        found: list[list[object]] = []
        for line in lines:
            if line and line[0] != "#":
                value, *rest = line.split(",")[:5]
                found.append([value if value.startswith("<") else float(value), *rest])
        return found

    assert rows(text.splitlines()) == rows((DATA / name).read_text().splitlines())


def test_user_only_counters_keep_the_modifier() -> None:
    counters = parse_counters({"counters": parse_perf_stat("0.42,msec,task-clock:u,416752,100.00,0.456,CPUs "
                                                           "utilized\n"), "n": 1})
    assert counters is not None
    assert perf_stat_csv(counters).splitlines()[0] == "0.420000,msec,task-clock:u,416752,100.00,,"
