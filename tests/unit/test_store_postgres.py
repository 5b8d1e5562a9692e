"""The results store against a real PostgreSQL server (Debian's, started by the test session)."""

from __future__ import annotations

import numpy as np
import pytest

from kbench.store import schema
from kbench.store.db import Store
from tests.unit.test_store import _begin, _summary


@pytest.fixture
def pg_store(private_postgres_url: str) -> Store:
    """A private database on the session's server, so tests do not see each other's runs."""
    return Store.open(private_postgres_url)


def test_samples_summaries_and_listing_round_trip_on_postgresql(pg_store: Store) -> None:
    assert pg_store.engine.dialect.name == "postgresql"
    assert pg_store.schema_version == schema.SCHEMA_VERSION
    run_id = _begin(pg_store)
    ticks = np.random.default_rng(3).integers(1, 1 << 40, size=20_000, dtype=np.uint64)
    pg_store.finish_run(run_id, status="complete", columns={"ticks": ticks}, summaries=[_summary(4.5)],
                        probe_header={"batch": 4})
    np.testing.assert_array_equal(pg_store.load_samples(run_id)["ticks"], ticks)
    record = pg_store.get_run(run_id)
    assert (record.status, record.n_samples, record.batch) == ("complete", 20_000, 4)
    rows = pg_store.list_runs(benchmark="syscall.*", tag="nightly")
    assert [row["id"] for row in rows] == [run_id] and rows[0]["median"] == 4.5
