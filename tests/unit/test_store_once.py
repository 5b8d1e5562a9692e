"""Machine and target rows created once while another writer is creating the same row: the
second writer looks while the first one's insert is not committed yet (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, func, select

from kbench.store import schema
from kbench.store.db import Store
from kbench.store.writes import machine_id, target_id

SYSINFO = {"hostname": "lab-box", "cpu": {"model": "Planted CPU", "count": 2}, "memory_bytes": 1 << 34}
TARGET = {"kind": "local", "kernel_release": "6.1.0-56-amd64", "kernel_version": "#1 SMP", "accel": None,
          "build_id": None}
HOLD_S = 1.0
"""How long the first writer keeps its insert uncommitted: the second one has started by then
(on a busy machine it may start later, and then it simply finds the committed row)."""


def _second_writer_meanwhile(store: Store, make: Callable[[Connection], int]) -> tuple[int, int | BaseException]:
    """The id the first writer made, and what the second got (an id, or its error)."""
    found: list[int | BaseException] = []

    def second() -> None:
        try:
            with store.engine.begin() as conn:
                found.append(make(conn))
        except BaseException as exc:  # the test reports it
            found.append(exc)

    with store.engine.begin() as conn:
        first = make(conn)
        other = threading.Thread(target=second)
        other.start()
        time.sleep(HOLD_S)
    other.join(60)
    return first, found[0]


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "sqlite":
        return Store.open(f"sqlite:///{tmp_path / 'k.db'}")
    return Store.open(str(request.getfixturevalue("private_postgres_url")))


@pytest.mark.parametrize(("table", "make"), [
    ("machines", lambda conn: machine_id(conn, SYSINFO)),
    ("targets", lambda conn: target_id(conn, TARGET)),
])
def test_a_row_two_writers_create_at_once_is_made_once(store: Store, table: str, make: Any) -> None:
    first, second = _second_writer_meanwhile(store, make)
    assert second == first
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(schema.metadata.tables[table])).scalar_one() == 1
