"""An imported hyperfine pair 2x apart on a machine that flips between speeds is a regression:
the multimodality guard does not veto a change larger than the distance between the modes."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import numpy as np
import pytest

from tests.e2e.stored_runs import kbench_in_process


def _hyperfine_result(command: str, times: list[float]) -> dict[str, object]:
    """One entry of hyperfine's --export-json ``results``, as hyperfine 1.x writes it."""
    return {"command": command, "mean": statistics.fmean(times), "stddev": statistics.stdev(times),
            "median": statistics.median(times), "user": 0.00096, "system": 0.00021, "min": min(times),
            "max": max(times), "times": times, "exit_codes": [0] * len(times)}


def test_an_imported_pair_two_times_apart_is_a_regression_despite_modes(tmp_path: Path) -> None:
    # 30 executions each of `sleep 0.01` and `sleep 0.02`; 30% of them 6% slower (a machine that
    # switches speed, as this VM does): both sides have two modes 6% apart.
    rng = np.random.default_rng(12)
    sides = []
    for centre in (0.0101, 0.0201):
        slow = rng.random(30) < 0.3
        sides.append([float(t) for t in centre * np.where(slow, 1.06, 1.0) * (1 + 0.003 * rng.standard_normal(30))])
    file = tmp_path / "hyperfine.json"
    file.write_text(json.dumps({"results": [_hyperfine_result("sleep 0.01", sides[0]),
                                            _hyperfine_result("sleep 0.02", sides[1])]}))
    db = tmp_path / "k.db"
    assert kbench_in_process(db, "import", str(file)).returncode == 0
    proc = kbench_in_process(db, "compare", "--runs", "1", "--runs", "2", "--json")
    (metric,) = json.loads(proc.stdout)["metrics"]
    assert metric["multimodal"] is True  # the modes were seen...
    assert metric["verdict"] == "regression", metric["reason"]  # ...and do not veto a 2x change
    assert metric["change_pct"] == pytest.approx(statistics.median(sides[1]) / statistics.median(sides[0]) * 100 - 100)
    assert any("larger than the distance between the modes" in w for w in metric["warnings"])
    gated = kbench_in_process(db, "compare", "--runs", "1", "--runs", "2", "--fail-on", "regression")
    assert gated.returncode == 9
