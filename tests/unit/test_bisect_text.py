"""A bisection's step medians are printed in their own unit: ns per call for a kernel benchmark,
ms for a program, a count of instructions (the table said 0.000 ms for ~100 ns calls)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from kbench.bisect.driver import DONE, Settings, _statistic_text
from kbench.report.bisect_report import render_text, report_dict


def _record(metric: str, medians: list[float]) -> dict[str, Any]:
    steps = [{"commit": f"{index:040x}", "subject": f"step {index}", "trials": [value] * 3, "median": value,
              "verdict": "good", "weak": False, "change_vs_good_pct": 0.5} for index, value in enumerate(medians, 1)]
    return {"id": 1, "status": DONE, "repo": "/r", "good": "a" * 40, "bad": "b" * 40, "command": "syscall.getppid",
            "build": "kbench", "params": {"commits": [s["commit"] for s in steps], "metric": metric},
            "refs": None, "result": {"candidates": []}, "steps": steps,
            "created_at": datetime(2026, 11, 29), "updated_at": datetime(2026, 11, 29)}


@pytest.mark.parametrize(("metric", "median", "shown"), [
    ("wall", 112.4, "112.4ns"),            # syscall.getppid in a guest: ns per call
    ("cpu", 60_123_456.0, "60.12ms"),      # a program's CPU time
    ("instructions", 2138.0, "2138"),      # counted, not timed
])
def test_each_step_median_is_printed_in_its_unit(metric: str, median: float, shown: str) -> None:
    text = render_text(report_dict(_record(metric, [median])))
    header = next(line for line in text.splitlines() if "commit" in line and "verdict" in line)
    assert "median ms" not in header and "median" in header
    row = next(line for line in text.splitlines() if "step 1" in line)
    assert f" {shown} " in row, row


def test_the_step_log_says_a_median_in_its_unit() -> None:
    assert _statistic_text(112.4, Settings()) == "112.4ns"
    assert _statistic_text(60_123_456.0, Settings()) == "60.12ms"
    assert _statistic_text(2138.0, Settings(counted=True)) == "2138 instructions"
