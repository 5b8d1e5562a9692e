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
