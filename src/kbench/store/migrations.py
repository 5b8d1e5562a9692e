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


# MIGRATIONS[v] upgrades a database at version v to v + 1.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {1: _add_calibrations, 2: _add_bisections}
