"""Fixtures shared by every test directory: real services started on 127.0.0.1 in temp dirs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.services import create_database, postgres_server, redis_server


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
    return create_database(postgres_url)
