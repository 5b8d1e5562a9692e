"""The results store against a real SQLite file."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

import numpy as np
import pytest

from kbench.store import schema
from kbench.store.db import RunNotFound, Store, StoreError, SummaryRecord, default_db_url

TARGET = {"kind": "local", "kernel_release": "6.1.0-56-amd64", "kernel_version": "#1 SMP"}
SYSINFO = {"hostname": "box", "cpu": {"model": "cpu", "count": 2}, "memory_bytes": 1 << 30,
           "noise": {"aslr": "2"}}


def _begin(store: Store, **overrides: object) -> int:
    kwargs: dict = dict(
        benchmark="syscall.getppid", metric="syscall.getppid.latency", unit="ns",
        direction="lower", params={"x": "1"}, request={"samples": 5}, sysinfo=SYSINFO,
        target=TARGET, tags=["nightly"],
    )
    kwargs.update(overrides)
    return store.begin_run(**kwargs)


def _summary(median: float) -> SummaryRecord:
    values = dict(n=3, min=1.0, median=median, p90=3.0, p95=3.0, p99=3.0, max=3.0, mean=2.0,
                  stdev=1.0, mad=1.0, steady_state_index=0)
    return SummaryRecord(metric="syscall.getppid.latency", unit="ns", basis="raw", values=values)


def test_samples_round_trip_in_order_and_are_compressed(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    store = Store.open(f"sqlite:///{db}")
    run_id = _begin(store)
    rng = np.random.default_rng(7)
    ticks = rng.integers(100, 10_000, size=50_000, dtype=np.uint64)
    store.finish_run(run_id, status="complete", columns={"ticks": ticks},
                     probe_header={"batch": 8, "timer": {"name": "tsc"}}, summaries=[_summary(2.0)])
    again = Store.open(f"sqlite:///{db}")
    loaded = again.load_samples(run_id)["ticks"]
    assert loaded.dtype == np.dtype("<u8")
    np.testing.assert_array_equal(loaded, ticks)
    # Independent check of the on-disk encoding with the sqlite3 module and zlib.
    with sqlite3.connect(db) as conn:
        dtype, codec, count, blob = conn.execute(
            "select dtype, codec, count, data from samples where run_id = ?", (run_id,)
        ).fetchone()
    assert (dtype, codec, count) == ("<u8", "zlib", 50_000)
    np.testing.assert_array_equal(np.frombuffer(zlib.decompress(blob), "<u8"), ticks)
    record = again.get_run(run_id)
    assert record.status == "complete" and record.n_samples == 50_000 and record.batch == 8
    assert record.target["kernel_release"] == "6.1.0-56-amd64"
    assert record.summaries[0]["median"] == 2.0
    assert record.tags == ["nightly"]


def test_run_is_recorded_as_running_before_it_finishes(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    run_id = _begin(store)
    assert store.get_run(run_id).status == "running"
    assert store.load_samples(run_id) == {}


def test_failed_finish_changes_nothing(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    run_id = _begin(store)
    bad = SummaryRecord(metric="m", unit="ns", basis="raw", values={"n": 1})  # missing columns
    with pytest.raises(KeyError):
        store.finish_run(run_id, status="complete", columns={"ticks": np.arange(4, dtype=np.uint64)},
                         summaries=[bad])
    # The transaction rolled back: no samples, still running.
    assert store.load_samples(run_id) == {}
    assert store.get_run(run_id).status == "running"


def test_columns_of_different_lengths_are_rejected(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    run_id = _begin(store)
    with pytest.raises(ValueError, match="differ in length"):
        store.finish_run(run_id, status="complete", columns={
            "ticks": np.arange(3, dtype=np.uint64), "utime_ns": np.arange(2, dtype=np.uint64)})


def test_invalid_status_and_missing_run(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    with pytest.raises(ValueError, match="invalid final run status"):
        store.finish_run(1, status="done")
    with pytest.raises(RunNotFound):
        store.get_run(42)
    with pytest.raises(RunNotFound):
        store.finish_run(42, status="failed", error="x")


def test_list_runs_filters_and_orders_newest_first(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    first = _begin(store)
    second = _begin(store, benchmark="syscall.stat", tags=[])
    other_kernel = _begin(store, target={**TARGET, "kernel_release": "6.12.0"})
    store.finish_run(first, status="complete", summaries=[_summary(5.0)])
    store.finish_run(second, status="interrupted")
    assert [r["id"] for r in store.list_runs()] == [other_kernel, second, first]
    assert [r["id"] for r in store.list_runs(benchmark="syscall.stat")] == [second]
    assert [r["id"] for r in store.list_runs(benchmark="syscall.*", status="interrupted")] == [second]
    assert [r["id"] for r in store.list_runs(kernel_release="6.12.0")] == [other_kernel]
    assert [r["id"] for r in store.list_runs(tag="nightly")] == [other_kernel, first]
    assert store.list_runs(benchmark="syscall.getppid", status="complete")[0]["median"] == 5.0
    # One machine and two targets were recorded, not one per run.
    with store.engine.connect() as conn:
        assert conn.execute(schema.machines.select()).fetchall().__len__() == 1
        assert conn.execute(schema.targets.select()).fetchall().__len__() == 2


def test_schema_version_is_recorded_and_newer_databases_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "k.db"
    store = Store.open(f"sqlite:///{db}")
    assert store.schema_version == schema.SCHEMA_VERSION
    with sqlite3.connect(db) as conn:
        conn.execute("update kbench_meta set value = ? where key = 'schema_version'",
                     (str(schema.SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match="newer than this kbench"):
        Store.open(f"sqlite:///{db}")


def test_default_url_follows_kbench_db_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KBENCH_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_db_url() == f"sqlite:///{tmp_path}/kbench/kbench.db"
    monkeypatch.setenv("KBENCH_DB", str(tmp_path / "x.db"))
    assert default_db_url() == f"sqlite:///{tmp_path}/x.db"
    monkeypatch.setenv("KBENCH_DB", "postgresql://u@h/db")
    assert default_db_url() == "postgresql://u@h/db"


def test_a_version_1_database_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    store = Store.open(f"sqlite:///{db}")
    run_id = _begin(store)
    with sqlite3.connect(db) as conn:  # make it look like a database written by schema v1
        conn.execute("drop table calibrations")
        conn.execute("update kbench_meta set value = '1' where key = 'schema_version'")
    upgraded = Store.open(f"sqlite:///{db}")
    assert upgraded.schema_version == schema.SCHEMA_VERSION == 4
    assert upgraded.get_run(run_id).status == "running"  # nothing lost
    cal = upgraded.save_calibration(benchmark="syscall.getppid", metric="m", target="local", params={},
                                    trials={"A1": [1.0], "A2": [1.1]}, run_ids=[1, 2], sigma_log=0.01,
                                    mde=[{"trials": 10, "power": 0.8, "effect_pct": 1.5}])
    latest = upgraded.latest_calibration("syscall.getppid", "local")
    assert latest is not None and latest["id"] == cal and latest["mde"][0]["effect_pct"] == 1.5
    assert upgraded.latest_calibration("syscall.getppid", "deb:6.1.0-56-amd64") is None


def test_a_version_3_database_gains_the_run_provenance_columns(tmp_path: Path) -> None:
    db = tmp_path / "v3.db"
    store = Store.open(f"sqlite:///{db}")
    run_id = _begin(store)
    store.finish_run(run_id, status="complete", summaries=[_summary(5.0)])
    with sqlite3.connect(db) as conn:  # rebuild ``runs`` as schema v3 had it: without the v4 columns
        v4 = set(schema.RUN_COLUMNS_V4)
        columns = [row[1] for row in conn.execute("pragma table_info(runs)") if row[1] not in v4]
        conn.execute("drop index ux_runs_task_key")
        quoted = ", ".join(f'"{name}"' for name in columns)
        conn.execute(f"create table runs_v3 as select {quoted} from runs")
        conn.execute("pragma foreign_keys=off")
        conn.execute("drop table runs")
        conn.execute("alter table runs_v3 rename to runs")
        conn.execute("update kbench_meta set value = '3' where key = 'schema_version'")
        assert not v4 & {row[1] for row in conn.execute("pragma table_info(runs)")}
    upgraded = Store.open(f"sqlite:///{db}")
    assert upgraded.schema_version == 4
    assert upgraded.get_run(run_id).status == "complete"  # nothing lost
    with sqlite3.connect(db) as conn:
        names = {row[1] for row in conn.execute("pragma table_info(runs)")}
        indexes = {row[1]: row[2] for row in conn.execute("pragma index_list(runs)")}
    assert set(schema.RUN_COLUMNS_V4) <= names
    assert indexes.get("ux_runs_task_key") == 1  # unique
