"""End to end: ``kbench run --counters`` stores the counters with the run; run and show print them."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import KbenchRunner, as_json

CORE_PMU = Path("/sys/bus/event_source/devices/cpu")


def test_run_counters_json_show_and_text(kbench: KbenchRunner) -> None:
    run = as_json(kbench("run", "syscall.getppid", "--samples", "20000", "--counters", "--json"))
    counters = run["counters"]
    task_clock = counters["task-clock"]
    assert task_clock["supported"] is True and task_clock["unit"] == "ns" and task_clock["value"] > 0
    operations = run["counters_context"]["operations"]
    assert operations == 20000 * run["batch"]
    assert task_clock["per_op"] == task_clock["value"] / operations
    # a getppid costs well under 100 µs of CPU; task-clock per op is the same order as the timed median
    assert 0.2 * run["median"] < task_clock["per_op"] < 100_000
    if not CORE_PMU.exists():
        assert counters["cycles"]["supported"] is False and "PMU" in counters["cycles"]["reason"]
        assert counters["ipc"]["supported"] is False

    shown = as_json(kbench("show", str(run["run_id"]), "--json"))
    assert shown["counters"] == counters

    text = kbench("show", str(run["run_id"]), "--no-hist").stdout
    assert "perf counters (perf_event_open" in text
    assert "task-clock" in text and "per op" in text


def test_no_counters_unless_asked(kbench: KbenchRunner) -> None:
    run = as_json(kbench("run", "syscall.getppid", "--samples", "2000", "--no-counters", "--json"))
    assert "counters" not in run
