"""The quick commands start without importing the heavy libraries.

Each command runs in a fresh interpreter that then reports which top-level packages it
imported; no timing is asserted (docs/PERFORMANCE.md has the start-up times, measured
by benchmarks/startup.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import KbenchRunner, as_json

REPO = Path(__file__).resolve().parents[2]
JOB = REPO / "examples" / "scaling.yaml"

HEAVY = {"scipy", "matplotlib", "sqlalchemy", "jinja2"}
NO_SAMPLES = HEAVY | {"numpy"}
"""Commands that handle no samples import none of these: ``--help``, ``list``, ``job``, and
``results`` (which reads the store through sqlite3: kbench.store.reads)."""
READS_SAMPLES = HEAVY
"""``show`` decodes a run's samples into numpy arrays, but needs neither SQLAlchemy (sqlite3
reads the file), scipy (its summaries are stored) nor matplotlib."""
SCALE_RUN = ("run", "will-it-scale.getppid1", "--duration", "1s", "--warmup", "0.25s", "-p", "interval=0.25", "--json")
"""A short run with several metrics (per-task rate, total rate, idle)."""

RUN_AND_REPORT = """
import json, os, subprocess, sys
started = []
popen_init = subprocess.Popen.__init__
def counting_init(self, args, *rest, **kwargs):
    started.append(os.path.basename(str(args[0] if isinstance(args, (list, tuple)) else args)))
    popen_init(self, args, *rest, **kwargs)
subprocess.Popen.__init__ = counting_init
from kbench.cli.main import main
sys.argv = ["kbench", *sys.argv[1:]]
try:
    main()
    code = 0
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
with open(os.environ["MODULES_OUT"], "w") as out:
    json.dump({"code": code, "modules": sorted({name.partition(".")[0] for name in sys.modules}),
               "all": sorted(sys.modules), "started": started}, out)
"""


def imported_by(args: list[str], db_path: Path | str, tmp_path: Path, *, every: bool = False) -> set[str]:
    """Top-level packages imported by ``kbench ARGS`` (which must exit 0); with ``every``, every
    module by its full name. ``db_path``: a SQLite file or a database URL."""
    return set(_report(args, db_path, tmp_path)["all" if every else "modules"])


def started_by(args: list[str], db_path: Path | str, tmp_path: Path) -> list[str]:
    """The programs ``kbench ARGS`` started (subprocess.Popen's first argument, by base name)."""
    return list(_report(args, db_path, tmp_path)["started"])


def _report(args: list[str], db_path: Path | str, tmp_path: Path) -> dict[str, Any]:
    report = tmp_path / "modules.json"
    env = dict(os.environ, KBENCH_DB=str(db_path), MODULES_OUT=str(report), COLUMNS="120")
    proc = subprocess.run(
        [sys.executable, "-c", RUN_AND_REPORT, *args], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(report.read_text())
    assert result["code"] == 0, f"kbench {' '.join(args)} exited {result['code']}: {proc.stderr}"
    assert proc.stdout.strip(), f"kbench {' '.join(args)} printed nothing"
    return dict(result)


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["list"],
        ["list", "--json"],
        ["job", "expand", str(JOB)],
        ["job", "expand", "--json", str(JOB)],
        ["job", "validate", str(JOB)],
    ],
    ids=lambda args: " ".join(Path(a).name for a in args),
)
def test_commands_without_the_store_import_no_heavy_library(
    args: list[str], db_path: Path, tmp_path: Path
) -> None:
    assert imported_by(args, db_path, tmp_path) & NO_SAMPLES == set()


def test_reading_the_store_imports_neither_sqlalchemy_scipy_nor_matplotlib(
    kbench: KbenchRunner, db_path: Path, tmp_path: Path
) -> None:
    probe_run = as_json(kbench("run", "syscall.getppid", "--samples", "500", "--json"))["run_id"]
    # Several metrics per run: each metric's summary must come from the store too.
    scale_run = as_json(
        kbench(*SCALE_RUN)
    )["run_id"]
    for args in (
        ["results"],
        ["results", "--json"],
        ["results", "--tag", "nothing", "--status", "complete", "-b", "syscall.*"],
    ):
        assert imported_by(args, db_path, tmp_path) & NO_SAMPLES == set(), args
    for args in (
        ["show", str(probe_run)],
        ["show", str(probe_run), "--json"],
        ["show", str(scale_run), "--json"],
        ["show", str(scale_run), "--hist", "log2"],
    ):
        assert imported_by(args, db_path, tmp_path) & READS_SAMPLES == set(), args
    # ... while the store is really read (by sqlite3), and a real measurement, which writes
    # through SQLAlchemy, really needs scipy.
    assert {"sqlite3", "numpy"} <= imported_by(["show", str(probe_run)], db_path, tmp_path)
    assert "sqlite3" in imported_by(["results"], db_path, tmp_path)
    assert {"sqlalchemy", "scipy"} <= imported_by(["run", "syscall.getppid", "--samples", "100"], db_path, tmp_path)


def test_results_of_a_database_not_made_yet_imports_no_heavy_library(tmp_path: Path) -> None:
    """Read-only commands create nothing; an absent database reads as empty, still without SQLAlchemy."""
    absent = tmp_path / "absent.db"
    assert imported_by(["results"], absent, tmp_path) & NO_SAMPLES == set()
    assert imported_by(["results", "--json"], absent, tmp_path) & NO_SAMPLES == set()
    assert not absent.exists()


def test_show_reports_the_summaries_stored_with_the_run(kbench: KbenchRunner) -> None:
    measured = as_json(
        kbench(*SCALE_RUN)
    )
    shown = as_json(kbench("show", str(measured["run_id"]), "--json"))
    for key in ("n", "min", "median", "p90", "p99", "max", "mean", "stdev", "median_ci", "steady_state_index"):
        assert shown[key] == measured[key], key
    assert [m["metric"] for m in shown["metrics"]] == [m["metric"] for m in measured["metrics"]]
    for stored, fresh in zip(shown["metrics"], measured["metrics"], strict=True):
        assert stored == fresh


SCRIPTED_HEAVY = {"sqlalchemy", "matplotlib", "scipy.stats", "kbench.report.comparison.html", "jinja2"}
"""What the commands people script on a store (issue 26) do without when they measure nothing:
SQLAlchemy (a read-only SQLite file is read through sqlite3), matplotlib and the HTML renderer
(text reports), scipy.stats (the KS p-value: kbench.compare.ks)."""
PLOTTING_AND_SCIPY = {"scipy.special", "scipy.stats", "matplotlib", "plotly"}
"""What ``show``, ``history`` and ``compare --runs`` (issue 36's start-up goal) never import:
the normal and t tails of a few verdicts and change points come from kbench.stats.distributions,
and only a measurement plans its sequential looks (kbench.compare.boundaries, scipy.special)."""


MEASURING = {"kbench.engine.interleaved", "kbench.engine.in_kernel", "kbench.engine.comparison_sides",
             "kbench.engine.runner", "kbench.engine.target_factory", "kbench.targets.factory",
             "kbench.engine.instructions"}
"""What measures a comparison, which ``compare --runs`` does without: it reads stored runs
(kbench.engine.compare imports the measuring side only where it measures; the interleaved
outcome it replays is kbench.engine.interleaved_outcome)."""


def _planted_store(db_path: Path, tmp_path: Path) -> tuple[list[int], Path]:
    """Two series of 12 stored runs (one with a 5 % step) and an imported hyperfine file."""
    from kbench.store.db import Store
    from tests.history.planting import fake_commits, noisy, plant_series

    store = Store.open(f"sqlite:///{db_path}")
    stepped = list(noisy(12)) + [v * 1.05 for v in noisy(12, seed=1)]
    ids = plant_series(store, stepped, commits=fake_commits(24))
    plant_series(store, noisy(12, seed=2), params={"spin": "1"})
    store.engine.dispose()
    timings = tmp_path / "hyperfine.json"
    timings.write_text(json.dumps({"results": [
        {"command": f"sleep 0.0{k}", "mean": 0.01 * k, "stddev": 0.0001, "median": 0.01 * k, "user": 0.001,
         "system": 0.0002, "min": 0.01 * k, "max": 0.01 * k, "times": [0.01 * k + 1e-5 * i for i in range(10)],
         "exit_codes": [0] * 10} for k in (1, 2)]}))
    return ids, timings


def test_scripted_commands_on_a_store_import_neither_sqlalchemy_scipy_stats_nor_matplotlib(
    kbench: KbenchRunner, db_path: Path, tmp_path: Path
) -> None:
    ids, timings = _planted_store(db_path, tmp_path)
    kbench("import", str(timings))  # stored once: the import below finds every run already stored
    for args in (
        ["compare", "--runs", ",".join(map(str, ids[:6])), "--runs", ",".join(map(str, ids[-6:]))],
        ["history"],
        ["report", "regressions"],
        ["import", str(timings)],
    ):
        assert imported_by(args, db_path, tmp_path, every=True) & SCRIPTED_HEAVY == set(), args
    assert "scipy" not in imported_by(["import", str(timings)], db_path, tmp_path)  # summaries are not needed
    # ... while they really did their work: the KS p-value and the change points were computed.
    compared = imported_by(["compare", "--runs", ",".join(map(str, ids[:6])), "--runs", ",".join(map(str, ids[-6:])),
                            "--format", "json"], db_path, tmp_path, every=True)
    assert {"kbench.compare.ks", "kbench.compare.interval", "sqlite3"} <= compared
    assert "kbench.history.edivisive" in imported_by(["history"], db_path, tmp_path, every=True)


def test_show_history_and_compare_runs_import_no_scipy_special_nor_plotting(
    kbench: KbenchRunner, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids, _ = _planted_store(db_path, tmp_path)
    sides = ["--runs", ",".join(map(str, ids[:6])), "--runs", ",".join(map(str, ids[-6:]))]
    # The probe's list is read once and kept in kbench's cache directory (kinds/probe/listing.py):
    # after that, reading stored runs starts no process (neither kbench-probe --list nor the guardian).
    monkeypatch.setenv("KBENCH_CACHE_DIR", str(tmp_path / "cache"))
    assert "kbench-probe" in started_by(["compare", *sides], db_path, tmp_path)
    for args in (["show", str(ids[0])], ["history"], ["compare", *sides], ["compare", *sides, "--json"]):
        assert started_by(args, db_path, tmp_path) == [], args
    for args in (["show", str(ids[0])], ["history"], ["history", "--json"], ["compare", *sides],
                 ["compare", *sides, "--json"]):
        imported = imported_by(args, db_path, tmp_path, every=True)
        assert imported & PLOTTING_AND_SCIPY == set(), args
        assert "scipy" not in imported, args  # not even scipy's package
        if args[0] == "compare":
            assert imported & MEASURING == set(), args
            assert {"kbench.engine.compare", "kbench.engine.interleaved_outcome"} <= imported, args
    # Unequal sides: the exact KS p-value loads scipy's compiled function without scipy.stats.
    uneven = imported_by(["compare", "--runs", ",".join(map(str, ids[:6])), "--runs", ",".join(map(str, ids[-5:]))],
                         db_path, tmp_path, every=True)
    assert uneven & PLOTTING_AND_SCIPY == set()
    # ... while the verdicts and change points were computed: a p-value and a change point.
    verdict = as_json(kbench("compare", *sides, "--json"))
    assert 0 < verdict["metrics"][0]["p_value"] < 0.05
    assert as_json(kbench("history", "--json"))["series"][0]["change_points"]


def test_fleet_status_opens_its_store_without_the_catalog(postgres_url: str, tmp_path: Path) -> None:
    """``kbench fleet status`` reads the fleet's PostgreSQL store (kbench.fleet.database) and
    imports neither Celery, the runner (catalog, kinds, engine, job reader) nor numpy."""
    imported = imported_by(["fleet", "status"], postgres_url, tmp_path, every=True)
    assert {"sqlalchemy", "kbench.fleet.database", "kbench.store.fleet"} <= imported
    assert {name.partition(".")[0] for name in imported} & {"celery", "numpy", "scipy", "matplotlib", "yaml"} == set()
    runner = {"kbench.fleet.execute", "kbench.catalog", "kbench.kinds", "kbench.engine", "kbench.jobs"}
    assert runner & imported == set()
