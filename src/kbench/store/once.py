"""Rows every writer may try to create at the same moment, created once.

The first runs stored in a new database, by several processes at once (a CI matrix, fleet
workers, ``xargs -P``), each look for their machine and target rows, find none and insert
them: a plain "select, then insert" lets all but one fail on a unique key (``UNIQUE
constraint failed: machines.fingerprint``, exit 5). A machine has a unique, non-null
fingerprint: its insert does nothing on a conflict (the dialect's ``ON CONFLICT DO NOTHING``)
and the row is read again. A target's unique key has nullable columns (``accel``,
``build_id``), which SQL's UNIQUE does not compare, so two writers would both insert and
leave two rows for one target: the writer takes the table's write lock for the rest of its
transaction before it looks (PostgreSQL: a transaction-level advisory lock; SQLite: its one
write lock, taken by a statement that changes nothing).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table, text


def insert_or_ignore(conn: Connection, table: Table, values: Mapping[str, Any], unique: Sequence[str]) -> None:
    """Insert ``values`` into ``table``, doing nothing when a row with the same ``unique`` columns
    (a unique constraint of non-null columns) exists or is being inserted by another writer."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as pg_insert

        conn.execute(pg_insert(table).values(**values).on_conflict_do_nothing(index_elements=list(unique)))
    elif conn.dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        conn.execute(sqlite_insert(table).values(**values).on_conflict_do_nothing(index_elements=list(unique)))
    else:
        from sqlalchemy import insert

        conn.execute(insert(table).values(**values))


def lock_for_insert(conn: Connection, table: Table) -> None:
    """Hold ``table``'s write lock until ``conn``'s transaction ends: another writer that looks for
    a row before inserting it waits, and then sees the row this one inserted."""
    if conn.dialect.name == "postgresql":
        key = zlib.crc32(f"kbench.{table.name}".encode())
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})
    elif conn.dialect.name == "sqlite":
        conn.execute(text(f"UPDATE {table.name} SET id = id WHERE 0"))
