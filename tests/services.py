"""Real PostgreSQL and Redis servers for tests: Debian's binaries, a temp dir, 127.0.0.1 only.

The servers are ``kbench.fleet.services``' (``kbench fleet demo`` starts the same ones):
each runs on a free random port chosen by the kernel, is owned by the context manager
that started it and is stopped (and waited for) when the block ends, whatever happened
inside, and dies with the test process if that is killed. Nothing here ever listens on
another address.
"""

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
    "LOOPBACK", "PostgresServer", "ServiceUnavailable", "free_port", "postgres_server", "redis_server",
    "running_postgres", "wait_for_port",
]
