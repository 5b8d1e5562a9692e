"""``kbench serve``: open the store read-only and run the dashboard with uvicorn.

Everything that can fail is done before the address is announced: the database is
opened and the socket bound (``prepare``), so a missing database or a busy port is one
error line, and the announced URL is one that answers.
"""

from __future__ import annotations

import errno
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event

from kbench.contract.request import BadRequest
from kbench.history.changes import DetectionSettings
from kbench.store.db import Store, StoreError, default_db_url

if TYPE_CHECKING:
    from fastapi import FastAPI

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


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: a free port) and listening; BadRequest says why not."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as exc:
        raise BadRequest(f"cannot listen on {host!r}: not an address of this machine ({exc})") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise BadRequest(f"port {port} on {host} is in use by another program: give another --port "
                             "(--port 0 takes a free one)") from None
        if exc.errno == errno.EACCES:
            raise BadRequest(f"no permission to listen on port {port} (ports below 1024 need root): "
                             "give another --port") from None
        raise BadRequest(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
    return sock


@dataclass
class Prepared:
    """A dashboard ready to serve: its app over the open database and its bound socket."""

    app: FastAPI
    sock: socket.socket

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{port}/"


def prepare(url: str | None, host: str, port: int, settings: DetectionSettings) -> Prepared:
    """Open the database (StoreError when there is none) and bind the socket (BadRequest)."""
    from kbench.web.app import create_app

    app = create_app(read_only_engine(url), settings)
    return Prepared(app, listening_socket(host, port))


def serve(prepared: Prepared) -> None:
    import uvicorn

    config = uvicorn.Config(prepared.app, log_level="warning", access_log=False)
    try:
        uvicorn.Server(config).run(sockets=[prepared.sock])
    finally:
        prepared.sock.close()
