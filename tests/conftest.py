"""Fixtures shared by every test directory: real services started on 127.0.0.1 in temp dirs."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.services import postgres_server, redis_server


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL server for the whole test session (Debian's postgresql, fsync off)."""
    with postgres_server(tmp_path_factory.mktemp("postgres")) as url:
        yield url


@pytest.fixture
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A fresh Redis server for one test (Debian's redis-server, no persistence)."""
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture
def private_postgres_url(postgres_url: str) -> str:
    """A database of its own on the session's PostgreSQL server, so a test sees only its own rows."""
    from sqlalchemy import create_engine, text

    name = f"t_{uuid.uuid4().hex[:12]}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return postgres_url.rsplit("/", 1)[0] + f"/{name}"
