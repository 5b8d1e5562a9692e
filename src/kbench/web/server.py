"""``kbench serve``: open the store read-only and run the dashboard with uvicorn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event

from kbench.history.changes import DetectionSettings
from kbench.store.db import Store, StoreError, default_db_url

LOCALHOST = "127.0.0.1"


def read_only_engine(url: str | None) -> Engine:
    """An engine over an existing results database that refuses every write.

    The schema is checked (and an older one migrated) by ``Store.open`` first, as every
    kbench command does; the dashboard then reads through a second engine whose
    connections are read-only: SQLite ``PRAGMA query_only``, PostgreSQL
    ``default_transaction_read_only``."""
    url = url or default_db_url()
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).is_file():
        raise StoreError(f"no results database at {url.removeprefix('sqlite:///')}: `kbench run …` creates it")
    Store.open(url).engine.dispose()
    if url.startswith("sqlite"):
        engine = create_engine(url)

        @event.listens_for(engine, "connect")
        def _query_only(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA query_only=ON")
            cursor.close()

        return engine
    if url.startswith("postgresql"):
        return create_engine(url, connect_args={"options": "-c default_transaction_read_only=on"})
    return create_engine(url)


def serve(url: str | None, host: str, port: int, settings: DetectionSettings) -> None:
    import uvicorn

    from kbench.web.app import create_app

    app = create_app(read_only_engine(url), settings)
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
