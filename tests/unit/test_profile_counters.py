"""Counters of a run: hardware events as a machine with a PMU reports them, multiplexing,
derived figures, unsupported events, sums over slots."""

from __future__ import annotations

import errno

import pytest

from kbench.profile.counters import (
    HARDWARE_EVENTS,
    counter_lines,
    counters_json,
    parse_counters,
    sum_raw,
)

# The counts perf's own documentation records for `perf stat ./hackbench 10` on a machine
# with a PMU (the sample output at the top of tools/perf/builtin-stat.c), with the derived
# figures perf printed beside them: "0.50 insns per cycle", "1.32% of all branches",
# "11.037 CPUs utilized" over "0.154822978 seconds time elapsed".
RECORDED = {
    "task-clock": 1708761321, "context-switches": 41190, "cpu-migrations": 6735, "page-faults": 17318,
    "cycles": 5205202243, "instructions": 2603501247, "branches": 484357498, "branch-misses": 6388934,
}
PERF_PRINTED_IPC = 0.50
PERF_PRINTED_BRANCH_MISS_PCT = 1.32
ELAPSED_NS = 154822978
PERF_PRINTED_CPUS_UTILIZED = 11.037


def _event(name: str, value: int | None, enabled: int = 1_000_000, running: int = 1_000_000) -> dict[str, object]:
    kind = "hardware" if name in HARDWARE_EVENTS else "software"
    if value is None:
        return {"name": name, "type": kind, "supported": False, "errno": errno.ENOENT,
                "error": "No such file or directory"}
    return {"name": name, "type": kind, "supported": True, "unit": "ns" if name == "task-clock" else "count",
            "value": value, "enabled_ns": enabled, "running_ns": running}


def _header(events: list[dict[str, object]], **extra: object) -> dict[str, object]:
    return {"n": 1000, "batch": 10, "counters": {"source": "perf_event_open", "scope": "user+kernel",
                                                   "events": events, **extra}}


def test_recorded_hardware_counts_give_the_figures_perf_printed() -> None:
    events = [_event(name, RECORDED.get(name)) for name in (*RECORDED, "cache-references", "cache-misses")]
    counters = parse_counters(_header(events, operations=10))
    assert counters is not None
    derived = counters.derived()
    assert derived["ipc"][0] == pytest.approx(PERF_PRINTED_IPC, abs=0.005)
    assert derived["branch-miss-rate"][0] == pytest.approx(PERF_PRINTED_BRANCH_MISS_PCT, abs=0.005)
    assert derived["cache-miss-rate"][0] is None  # cache events not counted in that recording
    assert counters.per_op("cycles") == pytest.approx(520520224.3)
    lines = counter_lines(counters, wall_ns=ELAPSED_NS)
    assert any(f"({PERF_PRINTED_CPUS_UTILIZED:.3f} CPUs utilized)" in line for line in lines)
    data = counters_json(_header(events, operations=10))["counters"]
    assert data["instructions"] == {
        "supported": True, "value": 2603501247, "unit": "count", "per_op": 260350124.7, "per_op_unit": "/op",
        "running_pct": 100.0, "multiplexed": False}
    assert data["ipc"]["value"] == pytest.approx(2603501247 / 5205202243)


def test_multiplexed_events_are_scaled_by_enabled_over_running_and_say_so() -> None:
    # cycles counted 40% of the time it was enabled: perf stat's estimate is raw / 0.4
    events = [_event("cycles", 2_000_000, enabled=10_000_000, running=4_000_000),
              _event("instructions", 3_000_000, enabled=10_000_000, running=6_000_000),
              _event("branches", 7, enabled=10_000_000, running=0)]
    counters = parse_counters(_header(events))
    assert counters is not None
    assert counters.value("cycles") == 5_000_000
    assert counters.value("instructions") == 5_000_000
    assert counters.derived()["ipc"][0] == 1.0
    assert counters.value("branches") is None  # enabled, never on a counter: no estimate
    data = counters.to_json()
    assert data["cycles"]["running_pct"] == 40.0 and data["cycles"]["multiplexed"] is True
    assert data["branches"]["value"] is None and "not counted" in data["branches"]["reason"]
    assert counters.context_json()["multiplexed"] == ["cycles", "instructions", "branches"]
    assert any("counted 40.0% of the time, scaled" in line for line in counter_lines(counters))


def test_an_unsupported_event_reads_as_unsupported_with_its_reason() -> None:
    counters = parse_counters(_header([_event("task-clock", 5000), _event("cycles", None)]))
    assert counters is not None
    data = counters.to_json()
    assert data["cycles"] == {"supported": False,
                              "reason": "no such event on this machine (no hardware PMU: typical of a VM) (ENOENT)"}
    assert data["ipc"]["supported"] is False
    assert data["task-clock"]["per_op"] == 0.5  # 5000 ns over n x batch = 10000 operations
    assert "cycles" not in counters.metric_values()
    assert any(line.startswith("not supported: cycles:") for line in counter_lines(counters))


def test_no_counters_in_the_header_means_none() -> None:
    assert parse_counters({"n": 3}) is None
    assert counters_json({"n": 3}) == {}


def test_slots_add_up_event_by_event() -> None:
    one = _header([_event("task-clock", 100, 100, 100), _event("cycles", None)], operations=4)["counters"]
    two = _header([_event("task-clock", 300, 300, 150), _event("cycles", None)], operations=6)["counters"]
    total = sum_raw([one, two])  # type: ignore[list-item]
    assert total is not None
    assert total["operations"] == 10
    assert total["events"][0]["value"] == 400 and total["events"][0]["running_ns"] == 250
    assert total["events"][1]["supported"] is False
    counters = parse_counters({"counters": total})
    assert counters is not None and counters.value("task-clock") == pytest.approx(400 * 400 / 250)
    assert sum_raw([]) is None


def test_a_comparison_sides_summed_counters_print_no_utilization_against_one_slots_wall() -> None:
    """A side's counters are its slots' sum, its header's wall time the first slot's: 14 slots of a
    120 ms program once printed '6.020 CPUs utilized' on 2 CPUs. The span differs: no ratio is printed."""
    from io import StringIO

    from rich.console import Console

    from kbench.cli.render import render_counters

    events = [_event("task-clock", 1_690_000_000), _event("context-switches", 1097)]
    slots = [{"slot": i, "block": i // 2, "metrics": {}} for i in range(14)]

    def shown(header: dict[str, object]) -> str:
        out = StringIO()
        render_counters(Console(file=out, width=200), header)
        return out.getvalue()

    side = shown({**_header(events, operations=14, slots=slots), "usage": {"wall_s": 0.2806}})
    assert "summed over 14 slots" in side and "CPUs utilized" not in side
    one = shown({**_header(events, operations=14), "usage": {"wall_s": 1.69}})
    assert "(1.000 CPUs utilized)" in one  # one span: task-clock over its own wall time
