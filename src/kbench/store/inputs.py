"""What fleet jobs carry, stored once by content: ``fleet_inputs`` and ``fleet_input_chunks`` (schema v12).

An input is a sequence of bytes (a file a job carries: ``kbench.fleet.inputs``) named by the
SHA-256 of those bytes. It is stored in chunks of ``CHUNK_BYTES``, each one row,
zlib-compressed unless that does not shrink it (a compressed archive or kernel), and in one
transaction with its ``fleet_inputs`` row: a reader sees an input whole or not at all.
Storing an input that is already there does nothing, so two jobs (or two submitters at once)
that carry one file store it once.

Why rows of ``bytea`` and not PostgreSQL's large objects: the rows go with the database's
ordinary rules (a transaction, ``DELETE`` with its cascade, table privileges, ``pg_dump`` of
the table, the same SQLAlchemy Core as every other table), where large objects need their
own privileges and their own clean-up (``lo_unlink``/``vacuumlo``: an object whose row is
deleted stays behind), psycopg 3 has no client API for them (psycopg/psycopg#73, open), and
the same code runs on SQLite, which has none. Chunks keep memory bounded
on both sides (a chunk at a time) and stay far below ``bytea``'s 1 GB value limit.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, insert, select
from sqlalchemy.exc import IntegrityError

from kbench.store import schema

CHUNK_BYTES = 1 << 20
"""Bytes of content per chunk row."""
ZLIB_LEVEL = 3
SHRINK_FACTOR = 0.95
"""A chunk is stored compressed only when that makes it at least 5 % smaller."""


class InputCorrupt(RuntimeError):
    """The store's bytes of an input do not have its digest (or its size): refused."""


@dataclass(frozen=True)
class StoredInput:
    digest: str
    size: int
    chunks: int


class InputStore:
    """Inputs by digest in the fleet's database (any SQLAlchemy engine: tests use SQLite too)."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def find(self, digest: str) -> StoredInput | None:
        table = schema.fleet_inputs
        with self.engine.connect() as conn:
            row = conn.execute(select(table.c.size, table.c.chunks).where(table.c.digest == digest)).first()
        return None if row is None else StoredInput(digest, int(row[0]), int(row[1]))

    def missing(self, digests: Iterable[str]) -> set[str]:
        """Those of ``digests`` not stored yet."""
        wanted = set(digests)
        if not wanted:
            return set()
        table = schema.fleet_inputs
        with self.engine.connect() as conn:
            found = {row[0] for row in conn.execute(select(table.c.digest).where(table.c.digest.in_(wanted)))}
        return wanted - found

    def put_file(self, digest: str, path: Path) -> bool:
        """Store the content of ``path`` as input ``digest`` unless it is stored; whether this stored it.

        The bytes are hashed again as they are read: InputCorrupt (nothing stored) if they are
        not ``digest`` any more (the file changed since it was hashed)."""
        if self.find(digest) is not None:
            return False
        with open(path, "rb") as handle:
            return self.put(digest, iter(lambda: handle.read(CHUNK_BYTES), b""))

    def put(self, digest: str, chunks: Iterable[bytes]) -> bool:
        """Store ``chunks`` (the content in order, each at most CHUNK_BYTES) as input ``digest``,
        in one transaction; False if it is stored already (by us or a concurrent submitter)."""
        hasher = hashlib.sha256()
        size = count = 0
        try:
            with self.engine.begin() as conn:
                conn.execute(insert(schema.fleet_inputs).values(digest=digest, size=0, chunks=0,
                                                                stored_at=datetime.now(UTC)))
                for chunk in chunks:
                    if len(chunk) > CHUNK_BYTES:
                        raise ValueError(f"a chunk of {len(chunk)} bytes (at most {CHUNK_BYTES})")
                    hasher.update(chunk)
                    codec, data = _encode(chunk)
                    conn.execute(insert(schema.fleet_input_chunks).values(digest=digest, seq=count, codec=codec,
                                                                          data=data))
                    size += len(chunk)
                    count += 1
                if hasher.hexdigest() != digest:
                    raise InputCorrupt(f"the bytes read have digest {hasher.hexdigest()}, not {digest} "
                                       "(the file changed while it was stored?)")
                table = schema.fleet_inputs
                conn.execute(table.update().where(table.c.digest == digest).values(size=size, chunks=count))
        except IntegrityError:
            if self.find(digest) is None:
                raise
            return False
        return True

    def read(self, digest: str) -> Iterator[bytes]:
        """The content of input ``digest``, chunk by chunk, checked: InputCorrupt when a chunk is
        missing, does not decode, or the whole does not have its digest and size (raised after the
        last chunk; a caller writes to a temporary file and uses it only if no error came).
        KeyError if there is no such input."""
        stored = self.find(digest)
        if stored is None:
            raise KeyError(digest)
        table = schema.fleet_input_chunks
        hasher = hashlib.sha256()
        size = expected_seq = 0
        with self.engine.connect() as conn:
            rows = conn.execution_options(stream_results=True, yield_per=4).execute(
                select(table.c.seq, table.c.codec, table.c.data).where(table.c.digest == digest)
                .order_by(table.c.seq))
            for seq, codec, data in rows:
                if seq != expected_seq:
                    raise InputCorrupt(f"input {digest}: chunk {expected_seq} is missing")
                chunk = _decode(digest, seq, codec, bytes(data))
                hasher.update(chunk)
                size += len(chunk)
                expected_seq += 1
                yield chunk
        if expected_seq != stored.chunks or size != stored.size or hasher.hexdigest() != digest:
            raise InputCorrupt(
                f"input {digest}: the store holds {size} bytes in {expected_seq} chunks with digest "
                f"{hasher.hexdigest()}, not {stored.size} bytes in {stored.chunks} chunks with its digest; refused")


def _encode(chunk: bytes) -> tuple[str, bytes]:
    packed = zlib.compress(chunk, ZLIB_LEVEL)
    return ("zlib", packed) if len(packed) < SHRINK_FACTOR * len(chunk) else ("raw", chunk)


def _decode(digest: str, seq: int, codec: str, data: bytes) -> bytes:
    if codec == "raw":
        return data
    if codec == "zlib":
        try:
            return zlib.decompress(data)
        except zlib.error as exc:
            raise InputCorrupt(f"input {digest}: chunk {seq} does not decompress ({exc})") from None
    raise InputCorrupt(f"input {digest}: chunk {seq} has an unknown codec {codec!r}")
