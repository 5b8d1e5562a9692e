"""The results store against a real SQLite file and a real PostgreSQL server (every test runs on both)."""

from __future__ import annotations

import hashlib
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pytest

from kbench.store import schema
from kbench.store.db import RunNotFound, Store, StoreError, SummaryRecord, default_db_url
from kbench.store.recovery import PendingRun

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


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database: a SQLite file, or a private database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'k.db'}"
    return str(request.getfixturevalue("private_postgres_url"))


@contextmanager
def raw(url: str) -> Iterator[Any]:
    """A DB-API connection that bypasses SQLAlchemy (sqlite3 or psycopg), committed at the end;
    its ``execute`` takes ``?`` placeholders on both."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            yield conn
        return
    dsn = url.replace("postgresql+psycopg://", "postgresql://")
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield _QmarkConnection(conn)


class _QmarkConnection:
    def __init__(self, conn: psycopg.Connection[Any]):
        self.conn = conn

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.conn.execute(sql.replace("?", "%s"), params)  # type: ignore[arg-type]


def test_samples_round_trip_in_order_and_are_compressed(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    rng = np.random.default_rng(7)
    ticks = rng.integers(100, 10_000, size=50_000, dtype=np.uint64)
    store.finish_run(run_id, status="complete", columns={"ticks": ticks},
                     probe_header={"batch": 8, "timer": {"name": "tsc"}}, summaries=[_summary(2.0)])
    again = Store.open(url)
    loaded = again.load_samples(run_id)["ticks"]
    assert loaded.dtype == np.dtype("<u8")
    np.testing.assert_array_equal(loaded, ticks)
    # Independent check of the stored encoding with the database's own driver and zlib.
    with raw(url) as conn:
        dtype, codec, count, blob = conn.execute(
            "select dtype, codec, count, data from samples where run_id = ?", (run_id,)
        ).fetchone()
    assert (dtype, codec, count) == ("<u8", "zlib", 50_000)
    np.testing.assert_array_equal(np.frombuffer(zlib.decompress(bytes(blob)), "<u8"), ticks)
    record = again.get_run(run_id)
    assert record.status == "complete" and record.n_samples == 50_000 and record.batch == 8
    assert record.target["kernel_release"] == "6.1.0-56-amd64"
    assert record.summaries[0]["median"] == 2.0
    assert record.tags == ["nightly"]


def test_run_is_recorded_as_running_before_it_finishes(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    assert store.get_run(run_id).status == "running"
    assert store.load_samples(run_id) == {}


def test_failed_finish_changes_nothing(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    bad = SummaryRecord(metric="m", unit="ns", basis="raw", values={"n": 1})  # missing columns
    with pytest.raises(KeyError):
        store.finish_run(run_id, status="complete", columns={"ticks": np.arange(4, dtype=np.uint64)},
                         summaries=[bad])
    # The transaction rolled back: no samples, still running.
    assert store.load_samples(run_id) == {}
    assert store.get_run(run_id).status == "running"


def test_columns_of_different_lengths_are_rejected(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    with pytest.raises(ValueError, match="differ in length"):
        store.finish_run(run_id, status="complete", columns={
            "ticks": np.arange(3, dtype=np.uint64), "utime_ns": np.arange(2, dtype=np.uint64)})


def test_invalid_status_and_missing_run(url: str) -> None:
    store = Store.open(url)
    with pytest.raises(ValueError, match="invalid final run status"):
        store.finish_run(1, status="done")
    with pytest.raises(RunNotFound):
        store.get_run(42)
    with pytest.raises(RunNotFound):
        store.finish_run(42, status="failed", error="x")


def test_list_runs_filters_and_orders_newest_first(url: str) -> None:
    store = Store.open(url)
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


def test_the_tag_filter_is_applied_before_the_limit(url: str) -> None:
    """Three tagged runs behind newer untagged ones: --tag T --limit 2 finds the two newest tagged."""
    store = Store.open(url)
    tagged = [_begin(store, tags=["before"]) for _ in range(3)]
    for _ in range(5):
        _begin(store, tags=["after"])
    _begin(store, tags=['x","before'])  # holds the text "before" in quotes, not the tag
    _begin(store, tags=["before-2", "%", "befor_"])
    assert [r["id"] for r in store.list_runs(tag="before", limit=2)] == tagged[:0:-1]
    assert [r["id"] for r in store.list_runs(tag="before", limit=50)] == tagged[::-1]
    assert store.list_runs(tag="befor%") == [] and store.list_runs(tag="nothing") == []
    assert len(store.list_runs(tag="%")) == 1


def test_a_machine_with_more_than_2_gib_of_memory_is_recorded(url: str) -> None:
    store = Store.open(url)
    big = {**SYSINFO, "hostname": "lkp-hsx-ex", "memory_bytes": 512 << 30}  # the seed's HSX EX: 512G
    run_id = _begin(store, sysinfo=big)
    assert store.get_run(run_id).sysinfo["memory_bytes"] == 512 << 30
    with raw(url) as conn:
        assert conn.execute("select memory_bytes from machines where hostname = ?", ("lkp-hsx-ex",)).fetchone() == (
            512 << 30,)


def test_a_task_key_is_stored_once(url: str) -> None:
    from sqlalchemy.exc import IntegrityError

    store = Store.open(url)
    first = _begin(store, task_key="task-1#0")
    with pytest.raises(IntegrityError):
        _begin(store, task_key="task-1#0")
    assert _begin(store, task_key="task-1#1") != first
    assert _begin(store) and _begin(store)  # runs without a key do not collide
    assert store.count_runs() == 4


def test_schema_version_is_recorded_and_newer_databases_are_refused(url: str) -> None:
    store = Store.open(url)
    assert store.schema_version == schema.SCHEMA_VERSION
    store.engine.dispose()
    with raw(url) as conn:
        conn.execute("update kbench_meta set value = ? where key = 'schema_version'",
                     (str(schema.SCHEMA_VERSION + 1),))
    with pytest.raises(StoreError, match="newer than this kbench"):
        Store.open(url)


def test_default_url_follows_kbench_db_and_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("KBENCH_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    assert default_db_url() == f"sqlite:///{tmp_path}/kbench/kbench.db"
    monkeypatch.setenv("KBENCH_DB", str(tmp_path / "x.db"))
    assert default_db_url() == f"sqlite:///{tmp_path}/x.db"
    monkeypatch.setenv("KBENCH_DB", "postgresql://u@h/db")
    assert default_db_url() == "postgresql://u@h/db"


def test_a_version_1_database_is_migrated(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    store.engine.dispose()
    with raw(url) as conn:  # make it look like a database written by schema v1
        conn.execute("drop table calibrations")
        conn.execute("update kbench_meta set value = '1' where key = 'schema_version'")
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    assert upgraded.get_run(run_id).status == "running"  # nothing lost
    cal = upgraded.save_calibration(benchmark="syscall.getppid", metric="m", target="local", params={},
                                    trials={"A1": [1.0], "A2": [1.1]}, run_ids=[1, 2], sigma_log=0.01,
                                    mde=[{"trials": 10, "power": 0.8, "effect_pct": 1.5}])
    latest = upgraded.latest_calibration("syscall.getppid", "local")
    assert latest is not None and latest["id"] == cal and latest["mde"][0]["effect_pct"] == 1.5
    assert upgraded.latest_calibration("syscall.getppid", "deb:6.1.0-56-amd64") is None


def _run_columns(url: str) -> set[str]:
    with raw(url) as conn:
        if url.startswith("sqlite"):
            return {row[1] for row in conn.execute("pragma table_info(runs)")}
        return {row[0] for row in conn.execute(
            "select column_name from information_schema.columns where table_name = 'runs'").fetchall()}


def _unique_indexes_of_runs(url: str) -> dict[str, bool]:
    with raw(url) as conn:
        if url.startswith("sqlite"):
            return {row[1]: bool(row[2]) for row in conn.execute("pragma index_list(runs)")}
        return {name: "UNIQUE" in definition for name, definition in conn.execute(
            "select indexname, indexdef from pg_indexes where tablename = 'runs'").fetchall()}


def test_a_version_3_database_gains_the_run_provenance_columns(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    store.finish_run(run_id, status="complete", summaries=[_summary(5.0)])
    store.engine.dispose()
    v4 = set(schema.RUN_COLUMNS_V4)
    with raw(url) as conn:  # take ``runs`` back to schema v3: without the v4 columns
        conn.execute("drop index ux_runs_task_key")
        if url.startswith("sqlite"):
            columns = [row[1] for row in conn.execute("pragma table_info(runs)") if row[1] not in v4]
            quoted = ", ".join(f'"{name}"' for name in columns)
            conn.execute(f"create table runs_v3 as select {quoted} from runs")
            conn.execute("pragma foreign_keys=off")
            conn.execute("drop table runs")
            conn.execute("alter table runs_v3 rename to runs")
        else:
            conn.execute("alter table runs " + ", ".join(f'drop column "{name}"' for name in sorted(v4)))
        conn.execute("update kbench_meta set value = '3' where key = 'schema_version'")
    assert not v4 & _run_columns(url)
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    assert upgraded.get_run(run_id).status == "complete"  # nothing lost
    assert v4 <= _run_columns(url)
    assert _unique_indexes_of_runs(url).get("ux_runs_task_key") is True


def test_a_version_4_database_gains_the_fleet_tables(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    store.engine.dispose()
    with raw(url) as conn:  # take the database back to schema v4
        for table in ("fleet_tasks", "fleet_jobs", "fleet_machines"):
            conn.execute(f"drop table {table}")
        if not url.startswith("sqlite"):
            conn.execute("alter table machines alter column memory_bytes type integer")
        conn.execute("update kbench_meta set value = '4' where key = 'schema_version'")
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    assert upgraded.get_run(run_id).status == "running"  # nothing lost
    with raw(url) as conn:
        for table in ("fleet_machines", "fleet_jobs", "fleet_tasks"):
            assert conn.execute(f"select count(*) from {table}").fetchone() == (0,)
        if not url.startswith("sqlite"):
            kind = conn.execute("select data_type from information_schema.columns "
                                "where table_name = 'machines' and column_name = 'memory_bytes'").fetchone()
            assert kind == ("bigint",)
    big = _begin(upgraded, sysinfo={**SYSINFO, "hostname": "big", "memory_bytes": 384 << 30})
    assert upgraded.get_run(big).sysinfo["memory_bytes"] == 384 << 30


def _pending(command: str, digest: str | None, started_at: str = "2026-11-20T03:00:00+00:00") -> PendingRun:
    """An imported run of ``hyperfine.command`` with three samples."""
    return PendingRun(
        run={"benchmark": "hyperfine.command", "metric": "hyperfine.command.time", "unit": "s", "direction": "lower",
             "params": {"command": command}, "request": {}, "sysinfo": None, "target": None,
             "tags": ["imported:hyperfine"], "started_at": started_at},
        status="complete", columns={"hyperfine.command.time": np.array([0.1, 0.2, 0.3])}, probe_header={},
        summaries=[], warnings=[], error=None, tool_output=None, digest=digest,
    )


def test_a_version_5_database_gains_the_import_digest_and_still_knows_its_imports(url: str) -> None:
    store = Store.open(url)
    old, how = store.store_pending_run(_pending("sleep 1", digest=None))  # as kbench < schema 6 stored it
    assert how == "added"
    store.engine.dispose()
    with raw(url) as conn:  # take the database back to schema v5
        conn.execute("drop index ux_runs_import_digest")
        conn.execute("alter table runs drop column import_digest")
        conn.execute("update kbench_meta set value = '5' where key = 'schema_version'")
    assert "import_digest" not in _run_columns(url)
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    assert _unique_indexes_of_runs(url).get("ux_runs_import_digest") is True
    assert upgraded.get_run(old).n_samples == 3  # nothing lost
    # The same entry imported again, now with its digest: recognised by benchmark, parameters, start, n, status.
    assert upgraded.store_pending_run(_pending("sleep 1", digest="a" * 64)) == (old, "exists")
    # Another command with the same start (two hyperfine files with one mtime) is another run.
    other, how = upgraded.store_pending_run(_pending("sleep 2", digest="b" * 64))
    assert how == "added" and other != old
    assert upgraded.store_pending_run(_pending("sleep 2", digest="b" * 64, started_at="2030-01-01T00:00:00")) == (
        other, "exists")  # the digest identifies it, whatever its start


@pytest.mark.parametrize("reader", ["write", "read_only"])
def test_a_current_version_database_lacking_added_columns_is_repaired(url: str, reader: str) -> None:
    """What a development build left (seen in CI): schema version 9 recorded, but its
    migrations numbered otherwise, so ``runs.import_digest`` was never added."""
    store = Store.open(url)
    old = _begin(store)
    store.engine.dispose()
    with raw(url) as conn:
        conn.execute("drop index ux_runs_import_digest")
        conn.execute("alter table runs drop column import_digest")
    assert "import_digest" not in _run_columns(url)
    reopened = Store.open(url, read_only=(reader == "read_only"))
    assert reopened.schema_version == schema.SCHEMA_VERSION
    assert "import_digest" in _run_columns(url)
    assert _unique_indexes_of_runs(url).get("ux_runs_import_digest") is True
    assert reopened.get_run(old).benchmark == "syscall.getppid"  # nothing lost
    writer = Store.open(url)
    assert writer.store_pending_run(_pending("sleep 1", digest="c" * 64))[1] == "added"


def test_runs_with_one_digest_are_stored_once_and_a_batch_is_all_or_nothing(url: str) -> None:
    store = Store.open(url)
    first = store.store_pending_runs([_pending("a", "1" * 64), _pending("b", "2" * 64), _pending("a", "1" * 64)])
    assert [how for _, how in first] == ["added", "added", "exists"]
    assert first[2][0] == first[0][0] and first[1][0] != first[0][0]
    broken = PendingRun(**{**_pending("c", "3" * 64).__dict__, "status": "weird"})
    with pytest.raises(ValueError, match="invalid final run status 'weird'"):
        store.store_pending_runs([_pending("d", "4" * 64), broken])
    assert store.count_runs() == 2  # neither run of the failed batch, and no run left `running`
    assert store.list_runs(status="running") == []


def test_a_version_6_database_gains_the_profiles_table(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    store.engine.dispose()
    with raw(url) as conn:  # take the database back to schema v6
        conn.execute("drop table profiles")
        conn.execute("update kbench_meta set value = '6' where key = 'schema_version'")
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    assert upgraded.load_profile(run_id) is None
    upgraded.save_profile(run_id, event="cpu-clock", frequency_hz=999, samples=3, weight=30, data=b"x",
                          details={"tool": "perf record"})
    assert upgraded.profiled_runs([run_id, run_id + 1]) == {run_id}


def test_a_profile_is_stored_beside_its_run_and_read_back_by_either_reader(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'p.db'}"
    store = Store.open(url)
    run_id = _begin(store)
    data = zlib.compress(b"prog;main;mix_b 30\nprog;main;mix_a 10\n")
    store.save_profile(run_id, event="cpu-clock", frequency_hz=999, samples=4, weight=40, data=data,
                       details={"window": "measured region"})
    store.save_profile(run_id, event="cpu-clock", frequency_hz=999, samples=4, weight=40, data=data,
                       details={"window": "measured region", "again": True})  # replaced, not added
    reader = Store.open(url, read_only=True)  # the standard library's sqlite3
    for found in (store.load_profile(run_id), reader.load_profile(run_id)):
        assert found is not None
        assert zlib.decompress(found["data"]).startswith(b"prog;main;mix_b 30")
        assert (found["event"], found["samples"], found["weight"]) == ("cpu-clock", 4, 40)
        assert found["details"] == {"window": "measured region", "again": True}
    with raw(url) as conn:
        assert conn.execute("select count(*) from profiles").fetchone() == (1,)
    with pytest.raises(RunNotFound):
        store.save_profile(run_id + 99, event="cpu-clock", frequency_hz=None, samples=0, weight=0, data=b"",
                           details={})


def test_a_version_8_database_gains_the_watch_tables(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    store.engine.dispose()
    with raw(url) as conn:  # take the database back to schema v8
        for table in ("watch_findings", "watch_commits", "watches"):
            conn.execute(f"drop table {table}")
        conn.execute("alter table fleet_tasks drop column spec")
        conn.execute("update kbench_meta set value = '8' where key = 'schema_version'")
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    assert upgraded.get_run(run_id).status == "running"  # nothing lost
    with raw(url) as conn:
        for table in ("watches", "watch_commits", "watch_findings"):
            assert conn.execute(f"select count(*) from {table}").fetchone() == (0,)
        assert conn.execute("select count(spec) from fleet_tasks").fetchone() == (0,)


def test_a_read_only_sqlite_store_reads_with_sqlite3_what_sqlalchemy_reads(tmp_path: Path) -> None:
    """``kbench results`` and ``show`` read a SQLite file through the standard library's
    sqlite3 (kbench.store.reads: the same SQL as through SQLAlchemy). Every reading agrees
    with the writable store's, and each row with what SQLAlchemy's column types decode."""
    url = f"sqlite:///{tmp_path / 'k.db'}"
    store = Store.open(url)
    first = _begin(store, tags=["nightly", "x"])
    store.finish_run(first, status="complete", columns={"ticks": np.arange(7, dtype=np.uint64)},
                     probe_header={"batch": 8, "timer": {"name": "tsc"}}, summaries=[_summary(2.0)],
                     warnings=["noisy"])
    running = _begin(store, benchmark="syscall.stat", tags=[], target={**TARGET, "kernel_release": "6.12.0"})
    reader = Store.open(url, read_only=True)

    assert reader.schema_version == store.schema_version == schema.SCHEMA_VERSION
    for run_id in (first, running):
        assert reader.get_run(run_id) == store.get_run(run_id)
    for filters in ({}, {"tag": "nightly"}, {"tag": "nigh"}, {"benchmark": "syscall.*", "status": "running"},
                    {"kernel_release": "6.12.0"}, {"limit": 1}, {"limit": None}):
        assert reader.list_runs(**filters) == store.list_runs(**filters), filters
    assert [r["id"] for r in reader.list_runs(tag="nightly")] == [first]
    loaded = reader.load_samples(first)
    np.testing.assert_array_equal(loaded["ticks"], np.arange(7, dtype=np.uint64))
    with pytest.raises(RunNotFound):
        reader.get_run(99)
    assert reader._engine is None  # ... all of it without SQLAlchemy's engine

    with store.engine.connect() as conn:  # SQLAlchemy Core decodes the row by the column types
        core = dict(conn.execute(schema.runs.select().where(schema.runs.c.id == first)).mappings().one())
    record = reader.get_run(first)
    assert record.started_at == core["started_at"] and isinstance(record.started_at, type(core["started_at"]))
    assert record.finished_at == core["finished_at"] is not None
    assert (record.params, record.request, record.tags, record.warnings) == (
        core["params"], core["request"], core["tags"], core["warnings"])
    assert record.probe_header == core["probe_header"] == {"batch": 8, "timer": {"name": "tsc"}}
    assert record.timer == core["timer"] and record.sysinfo == core["sysinfo"]


def _target(config: str | None, build_id: str) -> dict[str, Any]:
    return {"kind": "vm", "kernel_release": "6.1.192", "kernel_version": "#1", "accel": "tcg", "build_id": build_id,
            "details": {"kernel": {"commit": "c" * 40}}, "kernel_config": config}


def test_a_kernel_config_is_stored_once_per_digest_and_read_back_by_either_reader(url: str) -> None:
    config = "CONFIG_64BIT=y\n# CONFIG_SLOB is not set\nCONFIG_LOCALVERSION=\"\"\n"
    store = Store.open(url)
    first = _begin(store, target=_target(config, "a1"))
    second = _begin(store, target=_target(config, "b2"))  # another kernel with the same config
    other = _begin(store, target=_target(config + "CONFIG_SMP=y\n", "c3"))
    digest = hashlib.sha256(config.encode()).hexdigest()  # the content's SHA-256, computed here
    with raw(url) as conn:
        assert conn.execute("select count(*) from kernel_configs").fetchone() == (2,)
    readers = [store] + ([Store.open(url, read_only=True)] if url.startswith("sqlite") else [])
    for reader in readers:
        assert reader.get_run(first).target["config_digest"] == digest  # type: ignore[index]
        assert reader.get_run(second).target["config_digest"] == digest  # type: ignore[index]
        assert reader.get_run(other).target["config_digest"] != digest  # type: ignore[index]
        assert reader.kernel_config(digest) == config
        assert reader.kernel_config("0" * 64) is None
    assert "kernel_config" not in (store.get_run(first).target or {}).get("details", {})


def test_a_target_stored_before_its_config_was_known_gains_it(url: str) -> None:
    store = Store.open(url)
    before = _begin(store, target=_target(None, "a1"))
    after = _begin(store, target=_target("CONFIG_64BIT=y\n", "a1"))
    assert store.get_run(before).target == store.get_run(after).target  # one target row
    assert (store.get_run(before).target or {})["config_digest"] == hashlib.sha256(b"CONFIG_64BIT=y\n").hexdigest()


def test_a_version_9_database_gains_the_kernel_configs(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store, target=_target(None, "a1"))
    store.engine.dispose()
    with raw(url) as conn:  # take the database back to schema v9
        conn.execute("drop table kernel_configs")
        conn.execute("alter table targets drop column config_digest")
        conn.execute("update kbench_meta set value = '9' where key = 'schema_version'")
    if url.startswith("sqlite"):
        assert Store.open(url, read_only=True).kernel_config("0" * 64) is None  # not migrated by a reader
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    assert upgraded.get_run(run_id).status == "running"  # nothing lost
    new = _begin(upgraded, target=_target("CONFIG_SMP=y\n", "b2"))
    assert upgraded.kernel_config((upgraded.get_run(new).target or {})["config_digest"]) == "CONFIG_SMP=y\n"


def test_a_version_10_database_gains_the_findings_triage(url: str) -> None:
    from kbench.store.watch import WatchStore

    store = Store.open(url)
    watches = WatchStore(store.engine)
    row, _ = watches.open_watch(key="k", repo="/r", branches=["main"], build="make", job_path="/r/job.yaml",
                                job_text="benchmark: command\n", options={})
    finding = watches.add_finding(int(row["id"]), branch="main", instance_id="i0", benchmark="command",
                                  metric="command.cpu", params={}, series_id=None, kind="regression", good="a",
                                  bad="b", candidate={})
    store.engine.dispose()
    with raw(url) as conn:  # take the database back to schema v10
        for name in schema.FINDING_COLUMNS_V11:
            conn.execute(f"alter table watch_findings drop column {name}")
        conn.execute("update kbench_meta set value = '10' where key = 'schema_version'")
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    again = WatchStore(upgraded.engine)
    assert again.finding(finding)["triage"] is None  # nothing lost, nothing set
    again.set_triage(finding, "acknowledged", "seen", "someone@somewhere")
    stored = again.finding(finding)
    assert (stored["triage"], stored["triage_reason"]) == ("acknowledged", "seen") and stored["triage_at"] is not None
    assert stored["log"][-1].endswith("someone@somewhere set the status to 'acknowledged': seen")


def test_a_version_11_database_gains_the_fleet_inputs(url: str) -> None:
    from datetime import UTC, datetime

    from sqlalchemy import insert, select

    from kbench.store.inputs import InputStore

    def job(job_id: str, **more: Any) -> dict[str, Any]:
        return dict(id=job_id, name=f"{job_id}.yaml", job_text="benchmark: command\n", queues=["q"], repeat=1,
                    submitted_at=datetime.now(UTC), **more)

    store = Store.open(url)
    with store.engine.begin() as conn:
        conn.execute(insert(schema.fleet_jobs).values(job("j11")))
    store.engine.dispose()
    with raw(url) as conn:  # take the database back to schema v11
        conn.execute("drop table fleet_input_chunks")
        conn.execute("drop table fleet_inputs")
        for name in schema.FLEET_JOB_COLUMNS_V12:
            conn.execute(f"alter table fleet_jobs drop column {name}")
        conn.execute("update kbench_meta set value = '11' where key = 'schema_version'")
    upgraded = Store.open(url)
    assert upgraded.schema_version == schema.SCHEMA_VERSION == 12
    content = b"#!/bin/sh\nexit 0\n" * 1000
    digest = hashlib.sha256(content).hexdigest()
    inputs = InputStore(upgraded.engine)
    assert inputs.put(digest, [content[:7000], content[7000:]]) is True
    assert inputs.put(digest, [content]) is False  # stored once
    assert b"".join(inputs.read(digest)) == content and inputs.missing([digest, "0" * 64]) == {"0" * 64}
    manifest = {"files": [{"path": "prog", "digest": digest, "size": len(content), "mode": 0o755}]}
    jobs = schema.fleet_jobs
    with upgraded.engine.begin() as conn:
        conn.execute(insert(jobs).values(job("j12", inputs=manifest)))
        stored = dict(conn.execute(select(jobs.c.id, jobs.c.inputs).order_by(jobs.c.id)).all())
    assert stored == {"j11": None, "j12": manifest}  # nothing lost
