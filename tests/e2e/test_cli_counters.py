"""End to end: ``kbench run --counters`` stores the counters with the run; run and show print them."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.conftest import KbenchRunner, as_json
from tests.e2e.test_cli_compare import cpu_loops

__all__ = ["cpu_loops"]

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


def test_compare_judges_counters_per_execution_and_again_from_the_store(
    kbench: KbenchRunner, cpu_loops: dict[str, Path]
) -> None:
    # B runs 30% more loop iterations than A. task-clock counts the child's CPU time through perf
    # (inherited counters), command.cpu the same time through wait4's rusage: two methods, one
    # quantity. --fixed spends the whole budget, so the secondary family has its blocks.
    report = as_json(kbench("compare", "--command", str(cpu_loops["A"]), "--command", str(cpu_loops["B"]),
                            "-p", "shell=0", "--budget", "8s", "--fixed", "--counters", "--json"))
    metrics = {m["metric"]: m for m in report["metrics"]}
    cpu, task_clock = metrics["command.cpu"], metrics["command.perf-stat.task-clock"]
    assert task_clock["unit"] == "ns" and task_clock["trials"] == cpu["trials"]
    # per execution: the child's CPU time plus the probe's own spawn and wait (inside the region)
    for side in ("base", "new"):
        assert 0.9 * cpu[side] <= task_clock[side] <= 1.3 * cpu[side], (cpu, task_clock)
    assert 15 < task_clock["change_pct"] < 45
    assert "holm" in (report["correction"] or "")
    if "command.perf-stat.cpu-migrations" not in metrics:  # a 0 in some slot: shown as not judged
        assert "cpu-migrations" in report["parameters"]["counters not judged"]

    runs = dict(item.split("=") for item in report["parameters"]["runs"].split())
    again = as_json(kbench("compare", "--runs", runs[str(cpu_loops["A"])], "--runs", runs[str(cpu_loops["B"])],
                           "--counters", "--json"))
    stored = {m["metric"]: m for m in again["metrics"]}["command.perf-stat.task-clock"]
    assert stored["base"] == task_clock["base"] and stored["trials"] == task_clock["trials"]


def test_will_it_scale_counts_its_tasks_over_the_measured_intervals(kbench: KbenchRunner) -> None:
    # page_fault1: one operation is one first write to a page of a fresh anonymous mapping, one fault
    # (no transparent huge pages unless "always"; the probe's header records the setting)
    run = as_json(kbench("run", "will-it-scale.page_fault1", "-p", "nr_task=2", "-p", "interval=0.2",
                         "--duration", "0.6s", "--warmup", "0.2s", "--counters", "--json"))
    counters, context = run["counters"], run["counters_context"]
    assert context["source"] == "perf_event_open" and context["operations"] > 0
    if "[always]" not in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text():
        assert 0.98 < counters["page-faults"]["per_op"] < 1.02
    assert counters["task-clock"]["value"] > 0
