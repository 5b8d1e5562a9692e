"""kbench.ko's ``counter_values`` (docs/sysfs-ABI.md) read as a run's ``counters``: a recorded
guest file (tests/data/kmod), and a machine with a PMU as the module would print it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.profile.counters import HARDWARE_EVENTS, counters_json, parse_counters
from kbench.targets.kmod_counters import CounterValuesError, parse_counter_values

DATA = Path(__file__).resolve().parents[1] / "data" / "kmod"


def test_a_recorded_parallel_run_in_a_guest_without_a_pmu() -> None:
    # run_parallel of fib4_lookup on the 2 CPUs of a TCG guest: 2 x 20000 samples of batch 16
    head, raw = parse_counter_values((DATA / "counter_values_guest.txt").read_text())
    assert head == {"run": "4", "counted": "1", "sets": "2"}
    assert raw is not None and raw["source"] == "perf_event_create_kernel_counter" and raw["threads"] == 2
    counters = parse_counters({"n": 40000, "batch": 16, "counters": raw})
    assert counters is not None and counters.operations == 640000
    assert counters.value("task-clock") == 1271447423
    assert counters.per_op("task-clock") == pytest.approx(1271447423 / 640000)
    assert counters.per_op("context-switches") == pytest.approx(20 / 640000)
    for name in HARDWARE_EVENTS:
        event = counters.event(name)
        assert event is not None and not event.supported
        assert event.reason is not None and "ENOENT" in event.reason and "no hardware PMU" in event.reason
    shown = counters_json({"n": 40000, "batch": 16, "counters": raw})
    assert shown["counters"]["cycles"] == {"supported": False, "reason": counters.event("cycles").reason}  # type: ignore[union-attr]
    assert shown["counters"]["ipc"]["supported"] is False


def test_a_pmu_s_multiplexed_events_are_scaled_as_perf_stat_does() -> None:
    # what the module prints on a machine with 4 counters for 6 hardware events: each ran 2/3 of the time
    text = "run=7 counted=1 sets=1\n" + "".join(
        f"event={name} type=hardware unit=count supported=1 value={value} enabled_ns=3000000 running_ns=2000000\n"
        for name, value in (("cycles", 2000), ("instructions", 3000), ("branches", 600), ("branch-misses", 6),
                            ("cache-references", 100), ("cache-misses", 10)))
    _, raw = parse_counter_values(text)
    counters = parse_counters({"n": 10, "batch": 1, "counters": raw})
    assert counters is not None
    assert counters.value("cycles") == pytest.approx(3000)  # 2000 x 3/2
    assert counters.event("cycles").multiplexed  # type: ignore[union-attr]
    assert counters.derived()["ipc"][0] == pytest.approx(1.5)
    assert counters.derived()["branch-miss-rate"][0] == pytest.approx(1.0)


def test_a_run_that_did_not_count_has_no_counters() -> None:
    assert parse_counter_values("run=3 counted=0 sets=0\n") == ({"run": "3", "counted": "0", "sets": "0"}, None)


@pytest.mark.parametrize("text", ["", "event=task-clock supported=1\n", "run=1 counted=1 sets=1\nvalue=3\n"])
def test_a_file_not_as_documented_is_an_error(text: str) -> None:
    with pytest.raises(CounterValuesError):
        parse_counter_values(text)
