"""Schema versions and the steps between them."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.engine import Connection

# MIGRATIONS[v] upgrades a database at version v to v + 1.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {}
