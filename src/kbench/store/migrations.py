"""Schema versions and the steps between them."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Connection


def _add_calibrations(conn: Connection) -> None:
    """v1 → v2: A/A calibrations (``kbench calibrate``)."""
    from kbench.store.schema import calibrations

    calibrations.create(conn, checkfirst=True)


def _add_bisections(conn: Connection) -> None:
    """v2 → v3: saved bisections (``kbench bisect``)."""
    from kbench.store.schema import bisections

    bisections.create(conn, checkfirst=True)


def _add_run_provenance(conn: Connection) -> None:
    """v3 → v4: a run's owner (pid, boot id, host), measured version (commit, label) and fleet task key."""
    from sqlalchemy import inspect

    from kbench.store.schema import RUN_COLUMNS_V4, runs

    present = {column["name"] for column in inspect(conn).get_columns("runs")}
    preparer = conn.dialect.identifier_preparer
    for name in RUN_COLUMNS_V4:
        if name in present:
            continue
        column = runs.c[name]
        column_type = column.type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(
            f"ALTER TABLE {preparer.quote(runs.name)} ADD COLUMN {preparer.quote(name)} {column_type}"
        )
    for index in runs.indexes:
        if any(column.name in RUN_COLUMNS_V4 for column in index.columns):
            index.create(conn, checkfirst=True)


def _add_fleet_tables(conn: Connection) -> None:
    """v4 → v5: the fleet's machines, jobs and tasks (``kbench worker``, ``kbench fleet``);
    ``machines.memory_bytes`` becomes 64-bit (PostgreSQL's integer is 32 bits: 2 GiB at most)."""
    from kbench.store.schema import FLEET_TABLES

    for table in FLEET_TABLES:
        table.create(conn, checkfirst=True)
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("ALTER TABLE machines ALTER COLUMN memory_bytes TYPE BIGINT")


def _add_watch_tables(conn: Connection) -> None:
    """v5 → v6: ``kbench watch``'s branches, commits and findings; ``fleet_tasks.spec`` (a watch's fleet tasks)."""
    from sqlalchemy import inspect

    from kbench.store.schema import WATCH_TABLES, fleet_tasks

    for table in WATCH_TABLES:
        table.create(conn, checkfirst=True)
    present = {column["name"] for column in inspect(conn).get_columns("fleet_tasks")}
    if "spec" not in present:
        preparer = conn.dialect.identifier_preparer
        column_type = fleet_tasks.c.spec.type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(f"ALTER TABLE {preparer.quote('fleet_tasks')} ADD COLUMN spec {column_type}")


# MIGRATIONS[v] upgrades a database at version v to v + 1.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _add_calibrations, 2: _add_bisections, 3: _add_run_provenance, 4: _add_fleet_tables, 5: _add_watch_tables,
}
