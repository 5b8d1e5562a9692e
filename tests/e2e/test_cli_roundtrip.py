"""End to end: kbench run → show → results → export through a real SQLite file."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.e2e.conftest import KbenchRunner, as_json

JSON_KEYS = {"run_id", "metric", "unit", "n", "min", "median", "p90", "p95", "p99", "max",
             "mad", "mean", "stdev", "median_ci", "overhead", "steady_state_index"}


def test_run_show_results_export_round_trip(kbench: KbenchRunner, db_path: Path, tmp_path: Path) -> None:
    run = as_json(kbench("run", "syscall.getppid", "--samples", "2000", "--tag", "e2e", "--json"))
    assert run.keys() >= JSON_KEYS
    assert run["metric"] == "syscall.getppid.latency" and run["unit"] == "ns" and run["n"] == 2000
    assert run["min"] <= run["median"] <= run["p90"] <= run["p95"] <= run["p99"] <= run["max"]
    assert run["median_ci"][0] <= run["median"] <= run["median_ci"][1]
    run_id = run["run_id"]

    # The database holds the run, independently of kbench's own reader.
    with sqlite3.connect(db_path) as conn:
        status, n = conn.execute("select status, n_samples from runs where id=?", (run_id,)).fetchone()
    assert (status, n) == ("complete", 2000)

    shown = as_json(kbench("show", str(run_id), "--json"))
    for key in ("n", "min", "median", "p99", "max", "mad"):
        assert shown[key] == run[key], key

    listed = as_json(kbench("results", "--tag", "e2e", "--json"))
    assert [r["id"] for r in listed] == [run_id]
    assert listed[0]["median"] == run["median"]

    exported = json.loads(kbench("export", str(run_id), "--format", "json").stdout)
    per_op = np.array(exported["samples"]["value_ns_per_op"])
    ticks = np.array(exported["samples"]["ticks"], dtype=np.float64)
    assert per_op.size == 2000
    # Recompute the summary from the raw ticks with numpy alone.
    hz = exported["probe_header"]["timer"]["hz"]
    batch = exported["probe_header"]["batch"]
    independent = ticks * 1e9 / hz / batch
    np.testing.assert_allclose(per_op, independent)
    assert np.median(independent) == pytest.approx(run["median"], rel=1e-12)
    assert np.percentile(independent, 99) == pytest.approx(run["p99"], rel=1e-12)

    csv_text = kbench("export", str(run_id), "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    assert len(rows) == 2000
    assert [int(r["ticks"]) for r in rows[:50]] == exported["samples"]["ticks"][:50]

    parquet_file = tmp_path / "run.parquet"
    kbench("export", str(run_id), "--format", "parquet", "-o", str(parquet_file))
    table = pq.read_table(parquet_file)
    assert table.num_rows == 2000
    np.testing.assert_array_equal(table.column("ticks").to_numpy(), ticks.astype(np.uint64))
    metadata = json.loads(table.schema.metadata[b"kbench"])
    assert metadata["run_id"] == run_id and metadata["metric"] == "syscall.getppid.latency"


def test_text_report_has_seed_line_histogram_and_cdf(kbench: KbenchRunner) -> None:
    out = kbench("run", "syscall.getppid", "--samples", "3000").stdout
    assert "syscall.getppid.latency" in out
    seed = next(line for line in out.splitlines() if line.startswith("min="))
    for field in ("max=", "count=3000", "95th=", "90th=", "50th=", "mad="):
        assert field in seed
    assert "histogram (linear bins)" in out and "█" in out
    assert "CDF" in out and "•" in out
    assert "timer overhead" in out


def test_duration_mode_and_params(kbench: KbenchRunner) -> None:
    run = as_json(kbench("run", "syscall.pread", "-p", "size=512", "--duration", "0.3s",
                         "--warmup", "50ms", "--json"))
    assert run["n"] > 10
    shown = as_json(kbench("show", str(run["run_id"]), "--json"))
    assert shown["params"] == {"size": "512"}
