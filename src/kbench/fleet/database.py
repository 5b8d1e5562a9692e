"""The fleet's PostgreSQL store, opened the way every fleet process opens it.

Kept apart from the task runner (``fleet.execute``) so that ``kbench fleet status`` and the
other fleet commands that only read or queue open it without importing the catalog, the
engine or the job reader.
"""

from __future__ import annotations

from sqlalchemy import Engine, create_engine


def fleet_engine(url: str) -> Engine:
    """An engine that survives a database restart (connections checked before use) and
    does not hang on an unreachable host."""
    return create_engine(url, pool_pre_ping=True, pool_size=2, connect_args={"connect_timeout": 10})


def open_fleet_store(url: str) -> Engine:
    """Create or migrate the store's schema, then return a fleet engine on it. StoreError if
    unusable. ``Store.open`` serialises schema work itself (PostgreSQL's advisory lock
    ``kbench.store.db.SCHEMA_LOCK_KEY``, taken per transaction): holding that same lock here
    around it, as this did before the store took it, made every worker wait for itself."""
    from kbench.store.db import Store

    engine = fleet_engine(url)
    try:
        with engine.connect():  # an unreachable server fails here, after connect_timeout
            pass
        Store.open(url).engine.dispose()
    except BaseException:
        engine.dispose()
        raise
    return engine
