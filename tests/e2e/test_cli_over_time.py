"""``kbench show RUN --over-time``: seed 001's view of one run — chunk medians with their spread
against sample index and time, and where the warm-up ends — on a planted run whose numbers are
computed here, and on a real probe run whose sample times are checked against its own clock."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

from kbench.store.db import Store
from tests.e2e.stored_runs import TIMER_HZ, kbench_in_process, store_run

# Seed 001's second writev run: 2000 samples, the first 1000 at ~6 µs (a cold cache), then ~3.6 µs.
TICKS_PER_NS = TIMER_HZ / 1e9


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, int, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    ns = np.concatenate([rng.normal(6000, 150, 1000), rng.normal(3600, 100, 1000)])
    ticks = np.rint(ns * TICKS_PER_NS).astype(np.uint64)
    gaps = rng.integers(50, 150, ticks.size).astype(np.uint64)
    gaps[0] = 0
    gaps[1500] = int(0.02 * TIMER_HZ)  # a 20 ms pause before sample 1500
    db = tmp_path / "k.db"
    store = Store.open(f"sqlite:///{db}")
    run = store_run(store, ticks, benchmark="syscall.writev_t1k", columns={"gap_ticks": gaps})
    store.engine.dispose()
    return db, run, ticks, gaps


def test_chunks_times_and_the_warm_up_cut_as_json(planted: tuple[Path, int, np.ndarray, np.ndarray]) -> None:
    db, run, ticks, gaps = planted
    proc = kbench_in_process(db, "show", str(run), "--over-time", "--chunks", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    ns = ticks / TICKS_PER_NS
    starts = np.concatenate([[0], np.cumsum(ticks[:-1].astype(np.int64) + gaps[1:].astype(np.int64))]) / TIMER_HZ
    ends = starts + ticks / TIMER_HZ
    assert view["has_times"] and len(view["chunks"]) == 4
    for k, chunk in enumerate(view["chunks"]):
        part = ns[500 * k:500 * (k + 1)]
        assert (chunk["first"], chunk["last"]) == (500 * k, 500 * k + 499)
        assert chunk["median"] == pytest.approx(np.median(part), rel=1e-9)
        assert [chunk["p25"], chunk["p75"]] == pytest.approx(np.percentile(part, [25, 75]), rel=1e-9)
        assert chunk["start_s"] == pytest.approx(starts[500 * k], rel=1e-9, abs=1e-12)
        assert chunk["end_s"] == pytest.approx(ends[500 * k + 499], rel=1e-9)
    # the pause before sample 1500 shows as a 20 ms step between chunks 2 and 3
    assert view["chunks"][3]["start_s"] - view["chunks"][2]["end_s"] == pytest.approx(0.02, rel=0.01)
    # the warm-up ends where the planted cold phase does (robust MSER-5 finds it within a few samples)
    assert 990 <= view["steady_state_index"] <= 1010
    assert view["steady_state_time_s"] == pytest.approx(starts[view["steady_state_index"]], rel=1e-9)


def test_the_text_marks_the_warm_up_between_the_chunks_it_falls_in(
    planted: tuple[Path, int, np.ndarray, np.ndarray], tmp_path: Path
) -> None:
    db, run, _, _ = planted
    text = kbench_in_process(db, "show", str(run), "--over-time", "--chunks", "4").stdout.splitlines()
    rows = [line for line in text if re.match(r"\s+\d+–\d+\s", line)]
    assert [row.split()[0] for row in rows] == ["0–499", "500–999", "1000–1499", "1500–1999"]
    cut = next(i for i, line in enumerate(text) if "warm-up ends: steady from sample" in line)
    # seed 001's chunks: ~6 µs, ~6 µs, then ~3.6 µs; the cut sits just before or inside chunk 2 or 3
    assert text[cut + 1].split()[0] in ("500–999", "1000–1499")
    assert "6.0" in rows[0] and "3.6" in rows[3]
    page = tmp_path / "over-time.html"
    assert kbench_in_process(db, "show", str(run), "--over-time", "--html", str(page)).returncode == 0
    html = page.read_text()
    assert html.count("<svg") == 2 and "warm-up ends" in html and 'id="chunks"' in html


def test_a_real_probe_run_keeps_each_samples_time(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    made = kbench_in_process(db, "run", "syscall.getppid", "--samples", "3000", "--json")
    assert made.returncode == 0, made.stderr
    run = json.loads(made.stdout)
    view = json.loads(kbench_in_process(db, "show", str(run["run_id"]), "--over-time", "--json").stdout)
    assert view["has_times"] and view["n"] == 3000
    spans = [(c["start_s"], c["end_s"]) for c in view["chunks"]]
    assert all(a < b <= c for (a, b), (c, _) in pairwise(spans))
    # the probe's own wall clock around the measured region (usage.wall_s, read separately from
    # the samples) bounds the last sample's end: ticks and gaps cannot add up to more
    wall = run["usage"]["wall_s"]
    assert 0 < spans[-1][1] <= wall * 1.0001 + 1e-6
    assert spans[-1][1] >= 0.5 * wall  # and the samples fill most of it


def test_over_time_options_need_each_other(planted: tuple[Path, int, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    db, run, _, _ = planted
    proc = kbench_in_process(db, "show", str(run), "--html", str(tmp_path / "x.html"))
    assert proc.returncode == 2 and "--over-time" in proc.stderr
