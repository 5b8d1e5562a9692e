"""The ``bisections`` table: saved after every step, read back for status and resume."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from kbench.store import schema
from kbench.store.db import BisectionNotFound, RunNotFound, Store


def _create(store: Store, repo: str = "/src/linux") -> int:
    return store.create_bisection(repo=repo, good="a" * 40, bad="b" * 40, command="./prog", build="make",
                                  params={"trials": 5, "commits": ["c1", "c2"]})


def test_a_bisection_is_saved_updated_and_read_back(tmp_path: Path) -> None:
    store = Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    first = _create(store)
    second = _create(store, "/src/other")
    record = store.get_bisection(first)
    assert record["status"] == "running" and record["steps"] == [] and record["refs"] is None
    assert record["params"]["commits"] == ["c1", "c2"]
    steps = [{"commit": "c1", "subject": "s", "trials": [1.0, 2.0], "median": 1.5, "verdict": "good"}]
    store.update_bisection(first, steps=steps, refs={"good": [1.0], "bad": [2.0]})
    store.update_bisection(first, status="done", result={"first_bad": {"sha": "c2"}})
    record = store.get_bisection(first)
    assert record["steps"] == steps and record["status"] == "done" and record["result"]["first_bad"]["sha"] == "c2"
    assert record["updated_at"] >= record["created_at"]
    assert store.get_bisection()["id"] == second  # the latest
    with pytest.raises(BisectionNotFound, match="no bisection with id 99"):
        store.get_bisection(99)
    with pytest.raises(RunNotFound):  # the CLI maps it to the not-found exit code
        store.update_bisection(99, status="aborted")
    with pytest.raises(ValueError, match="cannot update"):
        store.update_bisection(first, repo="/elsewhere")


def test_an_empty_database_has_no_latest_bisection(tmp_path: Path) -> None:
    with pytest.raises(BisectionNotFound, match="no bisection in this database"):
        Store.open(f"sqlite:///{tmp_path / 'k.db'}").get_bisection()


def test_a_version_2_database_gains_the_bisections_table(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    Store.open(f"sqlite:///{db}")
    with sqlite3.connect(db) as conn:
        conn.execute("drop table bisections")
        conn.execute("update kbench_meta set value = '2' where key = 'schema_version'")
    upgraded = Store.open(f"sqlite:///{db}")
    assert upgraded.schema_version == schema.SCHEMA_VERSION
    assert upgraded.get_bisection(_create(upgraded))["command"] == "./prog"
