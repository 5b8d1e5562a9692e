"""Real PostgreSQL and Redis servers for tests: Debian's binaries, a temp dir, 127.0.0.1 only.

The servers are ``kbench.fleet.services``' (``kbench fleet demo`` starts the same ones):
each runs on a free random port chosen by the kernel, is owned by the context manager
that started it and is stopped (and waited for) when the block ends, whatever happened
inside, and dies with the test process if that is killed. Nothing here ever listens on
another address.
"""

import uuid

from kbench.fleet.services import (
    LOOPBACK,
    PostgresServer,
    ServiceUnavailable,
    free_port,
    postgres_server,
    redis_server,
    running_postgres,
    wait_for_port,
)

__all__ = [
    "LOOPBACK", "PostgresServer", "ServiceUnavailable", "create_database", "free_port", "postgres_server",
    "redis_server", "running_postgres", "wait_for_port",
]


def create_database(server_url: str) -> str:
    """A new, empty database (a random name) on the PostgreSQL server of ``server_url``; its URL."""
    from sqlalchemy import create_engine, text

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return server_url.rsplit("/", 1)[0] + f"/{name}"
