"""What ``kbench show`` and ``kbench results`` print about stored runs: every heading has
content, the version a run measured is named, and the figures are readable."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from kbench.store.db import Store
from kbench.trace.entries import EntryRow, EntrySummary
from kbench.trace.tracking_report import entry_lines
from tests.e2e.stored_runs import kbench_in_process, store_run

HEADINGS = ("histogram (linear bins)", "CDF", "run context", "trace log", "kernel entries", "CPU utilisation",
            "all metrics")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "k.db"


def test_no_heading_is_printed_without_lines_under_it(db: Path) -> None:
    store = Store.open(f"sqlite:///{db}")
    ticks = np.random.default_rng(0).integers(290, 320, 500)
    # a trace context without a log (nothing to report) and no usage: no "trace log" heading
    run = store_run(store, ticks, header={"trace": {"keys": []}})
    store.engine.dispose()
    proc = kbench_in_process(db, "show", str(run))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for i, line in enumerate(lines):
        if line in HEADINGS:
            assert i + 1 < len(lines) and lines[i + 1].strip(), (line, proc.stdout)
    assert "trace log" not in lines
    assert "histogram (linear bins)" in lines and "CDF" in lines


def test_entries_per_call_says_zero_rather_than_nothing() -> None:
    # A guest run with --track entries where nothing entered the kernel inside the timed region.
    summary = EntrySummary(
        source="kbench.ko", cpus=[0], span_ns=2e6, region="recorded windows", region_ns=1e6, ops=1000, op="call",
        kinds=[EntryRow(kind="irq", key=None, label="irq", count=0, total_ns=0.0, median_ns=None, max_ns=None)],
        keys=[], per_op={"all": 0.0, "irq": 0.0},
    )
    lines = entry_lines(summary)
    (per_call,) = [line for line in lines if "entries per call:" in line]
    assert re.search(r"entries per call: 0 \(", per_call), per_call
    assert not any("by syscall / irq (top 0 of 0" in line for line in lines)


def test_show_and_its_json_carry_the_commit_and_label_stored_with_the_run(db: Path) -> None:
    import json

    store = Store.open(f"sqlite:///{db}")
    commit = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432"
    run = store_run(store, np.arange(300, 400), commit=commit, label="v6.1-rc3 + fix", params={"spin": "100"})
    bare = store_run(store, np.arange(300, 400))
    store.engine.dispose()
    data = json.loads(kbench_in_process(db, "show", str(run), "--json").stdout)
    assert (data["commit"], data["label"]) == (commit, "v6.1-rc3 + fix")
    first = kbench_in_process(db, "show", str(run)).stdout.splitlines()[0]
    assert f"commit {commit}" in first and "label v6.1-rc3 + fix" in first and "spin=100" in first
    data = json.loads(kbench_in_process(db, "show", str(bare), "--json").stdout)
    assert data["commit"] is None and data["label"] is None
    assert "commit" not in kbench_in_process(db, "show", str(bare)).stdout.splitlines()[0]


def test_results_has_a_parameters_column_and_readable_seconds(db: Path) -> None:
    import json

    store = Store.open(f"sqlite:///{db}")
    store_run(store, np.arange(300, 400), params={"spin": "100", "mode": "thread"})
    # an imported pyperf benchmark keeps seconds: 1813.5 ticks of 1/2.4 ns = 755.6 ns
    store_run(store, np.full(50, 1813) + np.arange(50) % 2, benchmark="pyperf.bench", unit="s")
    store.engine.dispose()
    proc = kbench_in_process(db, "results")
    header, pyperf_row, probe_row = proc.stdout.splitlines()[:3]
    assert "parameters" in header.split()
    assert "spin=100 mode=thread" in probe_row
    assert "755.6ns" in pyperf_row and "0.000000" not in pyperf_row
    rows = json.loads(kbench_in_process(db, "results", "--json").stdout)
    assert rows[1]["params"] == {"spin": "100", "mode": "thread"}


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (7.556e-7, "s", "755.6ns"), (0.4521, "s", "452.1ms"), (12.5, "s", "12.50s"), (1500.0, "us", "1.500ms"),
    (3.0, "ms", "3.000ms"), (812.5, "cycles", "812.5 cycles"), (2.5e6, "ops/s", "2500000 ops/s"),
])
def test_times_in_any_unit_are_printed_auto_scaled(value: float, unit: str, shown: str) -> None:
    from kbench.report.units import format_value

    assert format_value(value, unit) == shown


def test_a_comparison_of_stored_runs_names_the_machines_that_measured_them(db: Path) -> None:
    import json

    store = Store.open(f"sqlite:///{db}")
    rng = np.random.default_rng(3)
    lab = {"hostname": "lab-a", "cpu": {"model": "Xeon 8370C", "count": 8}, "memory_bytes": 64 << 30}
    other = {"hostname": "lab-b", "cpu": {"model": "EPYC 7763", "count": 16}, "memory_bytes": 128 << 30}
    base = [store_run(store, rng.integers(700, 760, 400), sysinfo=lab) for _ in range(5)]
    new = [store_run(store, rng.integers(760, 820, 400), sysinfo=other) for _ in range(5)]
    store.engine.dispose()
    ids = [",".join(map(str, base)), ",".join(map(str, new))]
    proc = kbench_in_process(db, "compare", "--runs", ids[0], "--runs", ids[1], "--json")
    context = json.loads(proc.stdout)["context"]["measured on"]
    assert context == {
        f"runs {base[0]}-{base[-1]}": "lab-a: Xeon 8370C x 8, 64.0 GiB; kernel 6.1.0-56-amd64 (local)",
        f"runs {new[0]}-{new[-1]}": "lab-b: EPYC 7763 x 16, 128.0 GiB; kernel 6.1.0-56-amd64 (local)",
    }
    text = kbench_in_process(db, "compare", "--runs", ids[0], "--runs", ids[1]).stdout
    assert "host kernel" not in text  # the comparing machine's facts are not printed as the runs'
    assert "lab-a: Xeon 8370C x 8" in text and "lab-b: EPYC 7763 x 16" in text


def test_a_run_of_a_command_prints_its_wall_and_its_cpu_time(db: Path) -> None:
    import json
    import os
    import statistics
    import subprocess as sp

    loop = "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done"
    proc = kbench_in_process(db, "run", "command", "-p", f"cmd={loop}", "--samples", "8", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    cpu = data["cpu_time"]
    assert cpu["unit"] == "ns" and cpu["n"] == 8 and cpu["min"] <= cpu["median"] <= cpu["max"]
    # The same shell loop run here, its CPU time taken from wait4: the same order of magnitude
    # (a factor 3 either way leaves room for a loaded machine's cache and frequency effects).
    own = []
    for _ in range(5):
        child = sp.Popen(["sh", "-c", loop])
        _, _, usage = os.wait4(child.pid, 0)
        own.append((usage.ru_utime + usage.ru_stime) * 1e9)
    assert statistics.median(own) / 3 < cpu["median"] < 3 * statistics.median(own)
    text = kbench_in_process(db, "show", str(data["run_id"])).stdout
    wall_line = next(line for line in text.splitlines() if line.startswith("median "))
    cpu_line = next(line for line in text.splitlines() if line.startswith("CPU time (user + system"))
    assert wall_line and "median" in cpu_line and "CI" in cpu_line
