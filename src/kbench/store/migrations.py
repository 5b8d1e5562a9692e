"""Schema versions and the steps between them."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Table
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
    from kbench.store.schema import RUN_COLUMNS_V4

    _add_run_columns(conn, RUN_COLUMNS_V4)


def _add_run_columns(conn: Connection, names: tuple[str, ...]) -> None:
    """Add the columns ``names`` of ``runs`` (those not there yet) and the indexes over them."""
    from kbench.store.schema import runs

    _add_columns(conn, runs, names)


def _add_columns(conn: Connection, table: Table, names: tuple[str, ...]) -> None:
    """Add the columns ``names`` of ``table`` (those not there yet, as the schema declares them)
    and the table's indexes over them."""
    from sqlalchemy import inspect

    present = {column["name"] for column in inspect(conn).get_columns(table.name)}
    preparer = conn.dialect.identifier_preparer
    for name in names:
        if name in present:
            continue
        column_type = table.c[name].type.compile(dialect=conn.dialect)
        conn.exec_driver_sql(
            f"ALTER TABLE {preparer.quote(table.name)} ADD COLUMN {preparer.quote(name)} {column_type}"
        )
    for index in table.indexes:
        if any(column.name in names for column in index.columns):
            index.create(conn, checkfirst=True)


def _add_fleet_tables(conn: Connection) -> None:
    """v4 → v5: the fleet's machines, jobs and tasks (``kbench worker``, ``kbench fleet``);
    ``machines.memory_bytes`` becomes 64-bit (PostgreSQL's integer is 32 bits: 2 GiB at most)."""
    from kbench.store.schema import FLEET_TABLES

    for table in FLEET_TABLES:
        table.create(conn, checkfirst=True)
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql("ALTER TABLE machines ALTER COLUMN memory_bytes TYPE BIGINT")


def _add_import_digest(conn: Connection) -> None:
    """v5 → v6: ``runs.import_digest``, the content digest that identifies an imported run
    (unique). Runs imported before have none: ``Store.store_pending_run`` recognises those
    by benchmark, parameters, start, sample count and status."""
    from kbench.store.schema import RUN_COLUMNS_V6

    _add_run_columns(conn, RUN_COLUMNS_V6)


def _add_profiles(conn: Connection) -> None:
    """v6 → v7: a run's sampled call-graph profile (``--profile``)."""
    from kbench.store.schema import profiles

    profiles.create(conn, checkfirst=True)


def _add_run_heartbeat(conn: Connection) -> None:
    """v7 → v8: ``runs.heartbeat_at``, renewed while a run is measured (another host judges by it)."""
    from kbench.store.schema import RUN_COLUMNS_V8

    _add_run_columns(conn, RUN_COLUMNS_V8)


def _add_watch_tables(conn: Connection) -> None:
    """v8 → v9: ``kbench watch``'s branches, commits and findings; ``fleet_tasks.spec`` (a watch's fleet tasks)."""
    from kbench.store.schema import WATCH_TABLES, fleet_tasks

    for table in WATCH_TABLES:
        table.create(conn, checkfirst=True)
    _add_columns(conn, fleet_tasks, ("spec",))


def _add_kernel_configs(conn: Connection) -> None:
    """v9 → v10: kernels' ``.config`` files, each stored once under its digest (``kernel_configs``),
    and ``targets.config_digest`` naming a target's."""
    from kbench.store.schema import TARGET_COLUMNS_V10, kernel_configs, targets

    kernel_configs.create(conn, checkfirst=True)
    _add_columns(conn, targets, TARGET_COLUMNS_V10)


def _add_finding_triage(conn: Connection) -> None:
    """v10 → v11: ``watch_findings.triage``, ``triage_reason`` and ``triage_at`` (``kbench finding``)."""
    from kbench.store.schema import FINDING_COLUMNS_V11, watch_findings

    _add_columns(conn, watch_findings, FINDING_COLUMNS_V11)


def _add_fleet_inputs(conn: Connection) -> None:
    """v11 → v12: what fleet jobs carry to their workers: ``fleet_inputs`` and ``fleet_input_chunks``
    (each input stored once by digest) and ``fleet_jobs.inputs`` (a job's manifest)."""
    from kbench.store.schema import FLEET_JOB_COLUMNS_V12, INPUT_TABLES, fleet_jobs

    for table in INPUT_TABLES:
        table.create(conn, checkfirst=True)
    _add_columns(conn, fleet_jobs, FLEET_JOB_COLUMNS_V12)


# MIGRATIONS[v] upgrades a database at version v to v + 1.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _add_calibrations, 2: _add_bisections, 3: _add_run_provenance, 4: _add_fleet_tables,
    5: _add_import_digest, 6: _add_profiles, 7: _add_run_heartbeat, 8: _add_watch_tables,
    9: _add_kernel_configs, 10: _add_finding_triage, 11: _add_fleet_inputs,
}
