"""Spill files (``kbench.contract.spill``) and what the store does with them (``Store.import_spills``,
``Store.finish_unfinished``, the read-only views), on a real SQLite file and a real PostgreSQL server.

The samples are written here by hand in the documented format (docs/probe-format.md,
"Spill"); what the store keeps is checked against them and against numpy's own median.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from kbench.contract.spill import SpillDamaged, SpillWriter, read_spill, spill_head
from kbench.store.db import Store

HZ = 2.0e9
BATCH = 4
HEADER = {"format": "kbench-probe/1", "workload": "getppid", "batch": BATCH, "columns": ["ticks"],
          "timer": {"name": "tsc", "hz": HZ}, "overhead": {"min_ticks": 30, "median_ticks": 40}}


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # where a PostgreSQL store's spills go
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'k.db'}"
    return str(request.getfixturevalue("private_postgres_url"))


def _begin(store: Store, subtract_overhead: bool = False) -> int:
    return store.begin_run(benchmark="syscall.getppid", metric="syscall.getppid.latency", unit="ns",
                           direction="lower", params={}, request={"subtract_overhead": subtract_overhead},
                           sysinfo=None, target=None)


def _spill(store: Store, run_id: int, ticks: np.ndarray, tail: bytes = b"") -> Path:
    path = store.spill_path(run_id)
    assert path is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    with SpillWriter(path, HEADER) as writer:
        writer.append(ticks.astype("<u8").tobytes() + tail)
    return path


def _owner_gone(store: Store, run_id: int) -> None:
    """The run's kbench is gone: its row names another boot of this machine."""
    from sqlalchemy import update

    from kbench.store import schema

    with store.engine.begin() as conn:
        conn.execute(update(schema.runs).where(schema.runs.c.id == run_id).values(owner_boot_id="another-boot"))


def test_a_spill_reads_back_whole_rows_and_drops_a_partial_one(tmp_path: Path) -> None:
    path = tmp_path / "x.spill"
    ticks = np.arange(1, 1001, dtype=np.uint64)
    with SpillWriter(path, {**HEADER, "columns": ["ticks", "cpu"]}) as writer:
        writer.append(np.column_stack([ticks, ticks * 2]).astype("<u8").tobytes() + b"\x01\x02\x03")
    contents = read_spill(path)
    assert contents is not None and contents.rows == 1000 and contents.dropped_bytes == 3
    np.testing.assert_array_equal(contents.columns["cpu"], ticks * 2)
    assert contents.header["n"] == 1000 and contents.header["spill"] is True


def test_a_spill_without_its_whole_header_holds_nothing_yet(tmp_path: Path) -> None:
    path = tmp_path / "x.spill"
    path.write_bytes(b'{"format": "kbench-pro')
    assert spill_head(path) is None and read_spill(path) is None
    assert spill_head(tmp_path / "missing.spill") is None


def test_a_file_that_is_not_a_spill_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.spill"
    path.write_bytes(json.dumps({"format": "kbench-probe/1"}).encode() + b"\n" + bytes(16))
    with pytest.raises(SpillDamaged, match="not a spill"):
        read_spill(path)
    path.write_bytes(b"not json\n")
    with pytest.raises(SpillDamaged, match="not JSON"):
        spill_head(path)


def test_an_abandoned_run_gets_its_spilled_samples_at_the_next_open(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    rng = np.random.default_rng(3)
    ticks = rng.integers(400, 900, size=20_001, dtype=np.uint64)
    path = _spill(store, run_id, ticks, tail=b"\x00" * 5)  # a writer killed in mid-row
    _owner_gone(store, run_id)

    again = Store.open(url)
    record = again.get_run(run_id)
    assert record.status == "abandoned" and record.n_samples == ticks.size
    assert record.error is not None and f"the {ticks.size} samples it took before were recovered" in record.error
    assert any("recovered from the run's spill file" in w for w in record.warnings)
    np.testing.assert_array_equal(again.load_samples(run_id)["ticks"], ticks)
    assert record.probe_header is not None and record.probe_header["recovered"]["partial_row_bytes"] == 5
    [summary] = record.summaries
    expected = float(np.median(ticks.astype(np.float64) * 1e9 / HZ / BATCH))
    assert summary["median"] == pytest.approx(expected, rel=1e-12) and summary["n"] == ticks.size
    assert not path.exists()
    [listed] = again.list_runs()
    assert (listed["status"], listed["n_samples"]) == ("abandoned", ticks.size)
    assert listed["median"] == pytest.approx(expected, rel=1e-12)


def test_overhead_corrected_runs_are_summarised_corrected(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store, subtract_overhead=True)
    ticks = np.arange(100, 1100, dtype=np.uint64)
    _spill(store, run_id, ticks)
    _owner_gone(store, run_id)
    [summary] = Store.open(url).get_run(run_id).summaries
    assert summary["basis"] == "overhead-corrected"
    expected = float(np.median((ticks.astype(np.float64) - 40) * 1e9 / HZ / BATCH))
    assert summary["median"] == pytest.approx(expected, rel=1e-12)


def test_a_spill_of_a_run_still_measured_is_left_to_its_kbench(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)  # owned by this process, which is alive
    path = _spill(store, run_id, np.arange(1, 11, dtype=np.uint64))
    again = Store.open(url)
    assert path.exists()
    record = again.get_run(run_id)  # shown with what it has taken so far
    assert (record.status, record.n_samples) == ("running", 10)
    np.testing.assert_array_equal(again.load_samples(run_id)["ticks"], np.arange(1, 11))
    assert _stored_samples(again, run_id) == 0


def test_a_failed_run_is_closed_with_its_spilled_samples(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    ticks = np.arange(500, 1500, dtype=np.uint64)
    path = _spill(store, run_id, ticks)
    assert store.finish_unfinished(run_id, status="failed", error="qemu exited with status 1") == ticks.size
    record = store.get_run(run_id)
    assert record.status == "failed" and record.n_samples == ticks.size
    assert record.error == f"qemu exited with status 1; the {ticks.size} samples it took before were recovered " \
                           "from its spill file"
    assert _stored_samples(store, run_id) == ticks.size and not path.exists()


def test_a_run_without_a_spill_is_closed_without_samples(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    assert store.finish_unfinished(run_id, status="interrupted", error="stopped") == 0
    record = store.get_run(run_id)
    assert (record.status, record.n_samples, record.error) == ("interrupted", 0, "stopped")


def test_a_spill_is_stored_once_and_stale_ones_are_removed(url: str) -> None:
    store = Store.open(url)
    run_id = _begin(store)
    ticks = np.arange(1, 101, dtype=np.uint64)
    path = _spill(store, run_id, ticks)
    _owner_gone(store, run_id)
    saved = path.read_bytes()
    assert Store.open(url).import_spills() == []  # the open itself stored it
    path.write_bytes(saved)  # a second copy (two kbench opening at once see the same file)
    assert Store.open(url).import_spills() == []
    assert _stored_samples(store, run_id) == ticks.size and not path.exists()
    orphan = _spill(store, 999, ticks)  # no such run
    Store.open(url)
    assert not orphan.exists()


def test_a_read_only_view_shows_the_spilled_samples_without_storing_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'k.db'}"
    store = Store.open(url)
    run_id = _begin(store)
    ticks = np.arange(1, 51, dtype=np.uint64)
    _spill(store, run_id, ticks)
    _owner_gone(store, run_id)
    reader = Store.open(url, read_only=True)
    [listed] = reader.list_runs()
    assert (listed["status"], listed["n_samples"]) == ("abandoned", ticks.size)
    assert reader.get_run(run_id).n_samples == ticks.size
    np.testing.assert_array_equal(reader.load_samples(run_id)["ticks"], ticks)
    with sqlite3.connect(tmp_path / "k.db") as conn:
        assert list(conn.execute("select status, n_samples from runs")) == [("running", 0)]


def _stored_samples(store: Store, run_id: int) -> int:
    from sqlalchemy import select

    from kbench.store import schema

    with store.engine.connect() as conn:
        counts = conn.execute(select(schema.samples.c.count).where(schema.samples.c.run_id == run_id)).all()
    return sum(c for (c,) in counts)
