"""The results store: open a database by URL, save runs with their samples, read them back."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from kbench.contract.spill import SpillDamaged
from kbench.extras import ExtraMissing
from kbench.store import reads
from kbench.store.errors import DAMAGED_ADVICE, database_error_message, storable_id
from kbench.store.errors import BisectionNotFound as BisectionNotFound  # re-exported: their old home
from kbench.store.errors import RunNotFound as RunNotFound
from kbench.store.errors import StoreError as StoreError
from kbench.store.heartbeat import Heartbeat
from kbench.store.liveness import Liveness
from kbench.store.owners import current_owner
from kbench.store.records import SCHEMA_VERSION
from kbench.store.records import RunRecord as RunRecord  # re-exported: its old home
from kbench.store.records import SummaryRecord as SummaryRecord
from kbench.store.spills import (
    DAMAGED_SUFFIX,
    SpilledRun,
    remove_spill,
    spill_dir_for,
    spill_file,
    spill_files,
    spilled_run,
)
from kbench.store.writable import read_only_reason
from kbench.store.writes import insert_samples_and_summaries, inserted_id, machine_id, sample_rows, summary_rows

if TYPE_CHECKING:
    import sqlite3

    import numpy as np
    from sqlalchemy import Engine
    from sqlalchemy.engine import Connection

    from kbench.store.recovery import PendingRun

SQLITE_HEADER = b"SQLite format 3\x00"
"""``abandoned``: the kbench measuring it ended without finishing it (killed, crashed)."""


def sqlite_file_problem(path: Path) -> str | None:
    """Why an existing SQLite file cannot be a kbench database (not SQLite, cut short),
    or None. An empty file is a new database."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            header = f.read(100)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    if size == 0:
        return None
    if not header.startswith(SQLITE_HEADER[: len(header)]) or len(header) < len(SQLITE_HEADER):
        return "it is not a SQLite database (its first bytes are not the SQLite header); kbench leaves it as it is"
    if len(header) < 100:
        return f"it is cut short ({size} bytes, less than a SQLite header); {DAMAGED_ADVICE}"
    (page_size,) = struct.unpack(">H", header[16:18])
    page_size = 65536 if page_size == 1 else page_size
    change_counter, pages = struct.unpack(">II", header[24:32])
    (valid_for,) = struct.unpack(">I", header[92:96])
    wal = path.with_name(path.name + "-wal")
    pages_in_wal = wal.exists() and wal.stat().st_size > 0  # not yet copied back into the file
    if valid_for == change_counter and pages and size < pages * page_size and not pages_in_wal:
        return (f"it is cut short: {size} bytes where its header promises {pages} pages of {page_size}; "
                f"{DAMAGED_ADVICE}")
    return None


def default_db_url() -> str:
    """``KBENCH_DB`` if set, else SQLite in ``$XDG_DATA_HOME/kbench/kbench.db``."""
    env = os.environ.get("KBENCH_DB")
    if env:
        return env if "://" in env else f"sqlite:///{Path(env).expanduser().resolve()}"
    data_home = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return f"sqlite:///{data_home / 'kbench' / 'kbench.db'}"


@contextmanager
def _database_errors(where: str) -> Iterator[None]:
    """A database error inside the block becomes a StoreError with its one line for the user;
    a StoreError and anything not from the database go on unchanged."""
    try:
        yield
    except StoreError:
        raise
    except Exception as exc:
        message = database_error_message(exc, where)
        if message is None:
            raise
        raise StoreError(message) from exc


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Store:
    """A kbench results database reached through SQLAlchemy Core.

    ``open`` turns every error into a StoreError. The other methods let the database's
    own errors through (a program may retry or handle them, as the fleet's store does);
    ``database_error_message(exc, store.where)`` gives the one line for the user.
    """

    def __init__(self, engine: Engine | None, *, read_only: bool = False, where: str = "",
                 sqlite_file: Path | None = None, on_note: Callable[[str], None] | None = None):
        """``engine``; or None, read-only: an existing SQLite file (``sqlite_file``) read with the
        standard library's sqlite3, or without one a database that does not exist yet (empty).
        SQLAlchemy's engine is then made on first use. ``on_note`` is told what the store did
        that a person should know (a damaged spill file kept aside); without it, ``notes``
        keeps it."""
        if engine is None and not read_only:
            raise ValueError("a writable Store needs an engine")
        self._engine = engine
        self._sqlite_file = sqlite_file
        self._sqlite: sqlite3.Connection | None = None
        self.read_only = read_only
        self._heartbeat = Heartbeat(self)
        self._identity: str | None = None
        self.notes: list[str] = []
        self._on_note = on_note
        self.where = where or (str(sqlite_file) if engine is None else engine.url.render_as_string(hide_password=True))

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (a read-only SQLite store makes it now, on first use)."""
        if self._engine is None:
            from sqlalchemy import create_engine, event

            from kbench.store import schema

            if self._sqlite_file is None:  # nothing stored yet: an empty database in memory
                self._engine = create_engine("sqlite://")
                schema.metadata.create_all(self._engine)
            else:
                self._engine = _read_only_sqlite_engine(self._sqlite_file)
                event.listen(self._engine, "connect", _sqlite_read_pragmas)
        return self._engine

    @property
    def dialect(self) -> str:
        return "sqlite" if self._engine is None else self._engine.dialect.name

    @property
    def spill_dir(self) -> Path | None:
        """Where runs of this store spill their samples as they are taken (``store.spills``);
        None for a database that has no place for them (in memory, or not created yet)."""
        sqlite_file = self._sqlite_file
        if sqlite_file is None and self._engine is None:
            return None
        if sqlite_file is None and self._engine is not None and self._engine.dialect.name == "sqlite":
            database = self._engine.url.database
            if not database or database == ":memory:":
                return None
            sqlite_file = Path(database)
        return spill_dir_for(sqlite_file, lambda: self.identity)

    def spill_path(self, run_id: int) -> Path | None:
        """The spill file of run ``run_id`` (None: this store has no spill directory)."""
        directory = self.spill_dir
        return None if directory is None else spill_file(directory, run_id)

    def _query(self, sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Run one of ``kbench.store.reads``' statements: through sqlite3 on a read-only SQLite
        file (no SQLAlchemy imported), else through the engine."""
        if self._engine is None:
            import sqlite3

            if self._sqlite_file is None:  # nothing stored yet: every reading finds no row
                return []
            if self._sqlite is None:
                self._sqlite = sqlite3.connect(_read_only_sqlite_uri(self._sqlite_file), uri=True,
                                               check_same_thread=False)
                self._sqlite.row_factory = sqlite3.Row
                self._sqlite.execute("PRAGMA query_only=ON")
            return [dict(row) for row in self._sqlite.execute(sql, dict(params))]
        from sqlalchemy import text

        with self._engine.connect() as conn:
            return [dict(row) for row in conn.execute(text(sql), dict(params)).mappings()]

    @classmethod
    def open(cls, url: str | None = None, *, read_only: bool = False,
             on_note: Callable[[str], None] | None = None) -> Store:
        """Open the database at ``url`` or the default one.

        For writing (the default) it is created if needed, migrated to the current schema,
        runs left ``running`` by a kbench that is gone are marked ``abandoned``, and the
        samples such runs spilled (``store.spills``) are stored with them. With
        ``read_only`` nothing is written: SQLite opens the file read-only (as immutable on
        a read-only file system), and a database that does not exist yet reads as empty.
        An existing file that is not SQLite, or is cut short, is refused and left alone.
        """
        given = url is not None
        url = url or default_db_url()
        sqlite_path = Path(url.removeprefix("sqlite:///")) if url.startswith("sqlite:///") else None
        where = str(sqlite_path) if sqlite_path is not None else ""
        if sqlite_path is not None:
            problem = sqlite_file_problem(sqlite_path)
            if problem is not None:
                raise StoreError(f"results database {sqlite_path}: {problem}")
        if read_only and sqlite_path is not None and not sqlite_path.exists():
            if given and not sqlite_path.parent.is_dir():
                raise StoreError(_missing_directory(sqlite_path))
            return cls._nothing_stored_yet(where)
        if read_only and sqlite_path is not None:
            store = cls(None, read_only=True, where=where, sqlite_file=sqlite_path)
            with _database_errors(store.where):
                store._check_schema(url)
            return store
        from sqlalchemy import create_engine, event

        try:
            if sqlite_path is not None:
                _make_parent(sqlite_path)
                _check_writable(sqlite_path)
            engine = create_engine(url)
        except StoreError:
            raise
        except ModuleNotFoundError as exc:  # the URL's driver is an optional extra
            if str(url).startswith("postgresql"):
                raise ExtraMissing("postgres", f"the results database {url!r}", exc.name or "psycopg") from None
            raise StoreError(f"cannot open results database {url!r}: its driver {exc.name!r} is not "
                             "installed") from exc
        except Exception as exc:  # SQLAlchemy raises several types for bad URLs
            raise StoreError(f"cannot open results database {url!r}: {exc}") from exc
        if engine.dialect.name == "sqlite":
            event.listen(engine, "connect", _sqlite_read_pragmas if read_only else _sqlite_pragmas)
        store = cls(engine, read_only=read_only, where=where, on_note=on_note)
        with _database_errors(store.where):
            if read_only:
                store._check_schema(url)
            else:
                store._ensure_schema()
                store.mark_abandoned_runs()
                store.import_spills()
        return store

    @classmethod
    def _nothing_stored_yet(cls, where: str) -> Store:
        """A read-only view of a database that does not exist yet: empty, and nothing is created."""
        return cls(None, read_only=True, where=where)

    def _check_schema(self, url: str) -> None:
        """Read-only: the schema must be current. An older one is upgraded first when the
        database can be written (an upgrade is not a change of its content)."""
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"database schema version {version} is newer than this kbench ({SCHEMA_VERSION}); upgrade kbench"
            )
        missing = reads.missing_columns(self._query, self.dialect) if version == SCHEMA_VERSION else []
        if version < SCHEMA_VERSION or missing:
            try:
                Store.open(url).engine.dispose()
            except StoreError as exc:
                state = (f"lacks the columns {', '.join(missing)} of its schema version {version}" if missing
                         else f"has schema version {version}, older than this kbench's {SCHEMA_VERSION},")
                raise StoreError(f"results database {self.where} {state} and cannot be upgraded: {exc}") from exc

    def _ensure_schema(self) -> None:
        """Create the tables of a new database, or migrate an older one, once however many
        processes open it at the same moment: a database whose schema is current is left
        alone (no lock taken); otherwise the work is done under the database's schema lock
        (``_schema_lock``), after looking again at what a process before us made."""
        if self._schema_is_current():
            return
        from kbench.store import schema

        with self.engine.begin() as conn:
            _schema_lock(conn)
            schema.metadata.create_all(conn)
            self._migrate(conn)

    def _schema_is_current(self) -> bool:
        """True when the database has this kbench's schema version (read without a lock;
        a newer version is refused here)."""
        from sqlalchemy import inspect, select

        from kbench.store import schema

        with self.engine.connect() as conn:
            if not inspect(conn).has_table(schema.meta.name):
                return False
            row = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
            if row is None or self._known_version(int(row[0])) != schema.SCHEMA_VERSION:
                return False
            return not _missing_columns(conn)

    @staticmethod
    def _known_version(version: int) -> int:
        from kbench.store import schema

        if version > schema.SCHEMA_VERSION:
            raise StoreError(
                f"database schema version {version} is newer than this kbench "
                f"({schema.SCHEMA_VERSION}); upgrade kbench"
            )
        return version

    def _migrate(self, conn: Connection) -> None:
        """Under the schema lock: record the version of a new database, or run every step
        from the stored version to this kbench's."""
        from sqlalchemy import insert, select, update

        from kbench.store import schema
        from kbench.store.migrations import MIGRATIONS

        row = conn.execute(select(schema.meta.c.value).where(schema.meta.c.key == "schema_version")).first()
        if row is None:
            conn.execute(insert(schema.meta).values(key="schema_version", value=str(schema.SCHEMA_VERSION)))
            return
        version = self._known_version(int(row[0]))
        if version == schema.SCHEMA_VERSION and _missing_columns(conn):
            version = 1  # a development build's numbering: every step again (each is idempotent)
        while version < schema.SCHEMA_VERSION:
            MIGRATIONS[version](conn)
            version += 1
        conn.execute(
            update(schema.meta).where(schema.meta.c.key == "schema_version").values(value=str(version))
        )

    @property
    def schema_version(self) -> int:
        return reads.schema_version(self._query)

    @property
    def identity(self) -> str:
        """This store's identity: a UUID kept in the store (``kbench_meta.store_id``), made the first
        time a writable store is asked. Caches that hold a store's work (bisection worktrees, a
        watch's builds, spill files of a server's runs) are keyed by it, since row ids count from 1
        in every store. A read-only store that has none yet says ``unidentified``."""
        if self._identity is None:
            rows = self._query("SELECT value FROM kbench_meta WHERE key = 'store_id'", {})
            if not rows and not self.read_only:
                self._make_identity()
                rows = self._query("SELECT value FROM kbench_meta WHERE key = 'store_id'", {})
            self._identity = str(rows[0]["value"]) if rows else "unidentified"
        return self._identity

    def _make_identity(self) -> None:
        """Record a new store's UUID once, however many processes ask at the same moment."""
        import uuid

        from sqlalchemy import insert
        from sqlalchemy.exc import IntegrityError

        from kbench.store import schema

        try:
            with self.engine.begin() as conn:
                conn.execute(insert(schema.meta).values(key="store_id", value=str(uuid.uuid4())))
        except IntegrityError:
            pass  # another process made it first: its UUID is the store's

    # -- writing -----------------------------------------------------------------

    def begin_run(
        self,
        *,
        benchmark: str,
        metric: str,
        unit: str,
        direction: str,
        params: Mapping[str, Any],
        request: Mapping[str, Any],
        sysinfo: Mapping[str, Any] | None,
        target: Mapping[str, Any] | None,
        tags: Iterable[str] = (),
        commit: str | None = None,
        label: str | None = None,
        task_key: str | None = None,
        started_at: datetime | None = None,
    ) -> int:
        """Record a run as ``running`` before measuring, so a crash leaves a trace.

        ``commit`` and ``label`` name the version measured (history series carry them).
        ``task_key`` (a fleet task's trial) is unique among runs: a second run with the
        same key raises IntegrityError and stores nothing. The run's owner (this
        process's pid, the boot id and the host name) is recorded: a later kbench marks
        the run ``abandoned`` if that process is gone; while it runs, its heartbeat is
        renewed (``heartbeat``), by which another host's kbench can tell.
        """
        from sqlalchemy import func

        from kbench.store.writes import insert_run

        with self.engine.begin() as conn:
            run_id = insert_run(
                conn, benchmark=benchmark, metric=metric, unit=unit, direction=direction, params=params,
                request=request, sysinfo=sysinfo, target=target, tags=tags, commit=commit, label=label,
                task_key=task_key, started_at=started_at or _utcnow(), heartbeat_at=func.now(),
            )
        self._heartbeat.keep_beating()
        return run_id

    def mark_abandoned_runs(self) -> list[int]:
        """Mark ``abandoned`` every run left ``running`` whose kbench is gone: killed, crashed
        or its machine restarted (this host), its heartbeat stopped (another host), or its
        fleet task's lease ended (``store.liveness``); returns their ids."""
        from sqlalchemy import update

        from kbench.store import schema

        rows = self._query(
            "SELECT id, owner_pid, owner_boot_id, owner_host, started_at, heartbeat_at, task_key "
            "FROM runs WHERE status = 'running'", {},
        )
        if not rows:
            return []
        liveness = Liveness(self._query)
        gone = [(int(row["id"]), why) for row in rows if (why := liveness.why_gone(row)) is not None]
        r = schema.runs.c
        with self.engine.begin() as conn:
            for run_id, why in gone:
                conn.execute(
                    update(schema.runs)
                    .where((r.id == run_id) & (r.status == "running"))
                    .values(status="abandoned", finished_at=_utcnow(), error=f"abandoned: {why}")
                )
        return [run_id for run_id, _ in gone]

    def heartbeat(self) -> int:
        """Renew the heartbeat of every run this process is measuring in this database (the
        runs it began that are still ``running``); returns how many. ``begin_run`` starts a
        thread that calls it every HEARTBEAT_S while there are such runs."""
        from sqlalchemy import func, update

        from kbench.store import schema

        owner = current_owner()
        r = schema.runs.c
        with self.engine.begin() as conn:
            renewed = conn.execute(
                update(schema.runs)
                .where((r.status == "running") & (r.owner_pid == owner.pid) & (r.owner_host == owner.host)
                       & (r.owner_boot_id == owner.boot_id))
                .values(heartbeat_at=func.now())
            )
        return int(renewed.rowcount)

    def finish_unfinished(self, run_id: int, *, status: str, error: str) -> int:
        """Close a run whose measurement did not come back (failed, interrupted before its
        samples were fetched), with the samples its spill kept; returns how many. The spill
        is removed once stored; when the database fails it stays for the next kbench."""
        record = self.get_run(run_id)
        try:
            spilled = self._spilled(record, why=f"it ended {status}")
        except SpillDamaged as exc:
            note = self._set_spill_aside(run_id, exc)
            self.finish_run(run_id, status=status, warnings=[*record.warnings, note], error=f"{error}; {note}")
            return 0
        if spilled is None:
            self.finish_run(run_id, status=status, error=error)
        else:
            self.finish_run(
                run_id, status=status, columns=spilled.columns, probe_header=spilled.probe_header,
                summaries=spilled.summaries, warnings=[*record.warnings, spilled.warning],
                error=f"{error}; {_recovered_note(spilled.rows)}",
            )
        remove_spill(self.spill_dir, run_id)
        return 0 if spilled is None else spilled.rows

    def discard_spill(self, run_id: int) -> None:
        """Remove run ``run_id``'s spill: its samples are stored (or in a recovery file)."""
        remove_spill(self.spill_dir, run_id)

    def import_spills(self) -> list[int]:
        """Store the samples of every spill whose run kbench left unfinished (abandoned,
        failed or interrupted without them); returns the ids of the runs that got samples.
        A spill of a run still ``running`` is left to its kbench; one whose run has its
        samples, or is gone, is removed. A spill that cannot be stored now stays."""
        from sqlalchemy import select, update

        from kbench.store import schema

        directory = self.spill_dir
        imported: list[int] = []
        r = schema.runs.c
        for run_id, path in sorted(spill_files(directory).items()) if directory is not None else []:
            try:
                with self.engine.connect() as conn:
                    row = conn.execute(select(r.status, r.n_samples).where(r.id == run_id)).first()
                if row is not None and row.status == "running":
                    continue
                if row is None or row.n_samples:
                    remove_spill(directory, run_id)
                    continue
                record = self.get_run(run_id)
                try:
                    spilled = self._spilled(record, why=f"it was left {record.status}")
                except SpillDamaged as exc:
                    self.add_warning(run_id, self._set_spill_aside(run_id, exc))
                    continue
                if spilled is not None:
                    with self.engine.begin() as conn:
                        header = spilled.probe_header
                        updated = conn.execute(
                            update(schema.runs)
                            .where((r.id == run_id) & (r.status != "running") & (r.n_samples == 0))
                            .values(n_samples=spilled.rows, probe_header=header, timer=header.get("timer"),
                                    overhead=header.get("overhead"), batch=header.get("batch"),
                                    warnings=[*record.warnings, spilled.warning],
                                    error=f"{record.error or record.status}; {_recovered_note(spilled.rows)}")
                        )
                        if updated.rowcount != 1:  # another kbench stored it meanwhile
                            continue
                        insert_samples_and_summaries(conn, sample_rows(run_id, spilled.columns),
                                                     summary_rows(run_id, spilled.summaries))
                    imported.append(run_id)
                remove_spill(directory, run_id)
            except OSError as exc:  # unreadable: left where it is, for a person to look at
                self._note(f"the spill file {path} of run {run_id} cannot be read "
                           f"({exc.strerror or exc}); left where it is")
                continue
            except Exception as exc:
                if database_error_message(exc) is None:
                    raise
                continue
        return imported

    def _note(self, text: str) -> None:
        if self._on_note is not None:
            self._on_note(text)
        else:
            self.notes.append(text)

    def _set_spill_aside(self, run_id: int, damage: SpillDamaged) -> str:
        """Move run ``run_id``'s damaged spill out of the spills (``….spill.damaged``), for a
        person to look at; the note (also told to ``on_note``) says which file, why and where."""
        path = spill_file(self.spill_dir, run_id) if self.spill_dir is not None else None
        why = str(damage).removeprefix(f"{path}: ")
        if path is None:
            return f"run {run_id}'s spill is damaged ({why})"
        aside = path.with_name(path.name + DAMAGED_SUFFIX)
        try:
            path.replace(aside)
        except OSError as exc:
            note = (f"the spill file {path} of run {run_id} is damaged ({why}) and cannot be moved aside "
                    f"({exc.strerror or exc}): the run is stored without its samples; the file is left as it is")
        else:
            note = (f"the spill file {path} of run {run_id} is damaged ({why}): the run is stored without its "
                    f"samples; the file is kept as {aside}")
        self._note(note)
        return note

    def _spilled(self, record: RunRecord, *, why: str) -> SpilledRun | None:
        path = self.spill_path(record.id)
        if path is None or not path.exists():
            return None
        return spilled_run(path, metric=record.metric, unit=record.unit,
                           subtract_overhead=bool(record.request.get("subtract_overhead")), why=why)

    def machine_id(self, sysinfo: Mapping[str, Any]) -> int:
        """The id of the machine ``sysinfo`` describes, recorded now if it is new."""
        with self.engine.begin() as conn:
            return machine_id(conn, sysinfo)

    def finish_run(
        self,
        run_id: int,
        *,
        status: str,
        columns: Mapping[str, np.ndarray] | None = None,
        probe_header: Mapping[str, Any] | None = None,
        summaries: Iterable[SummaryRecord] = (),
        warnings: Iterable[str] = (),
        error: str | None = None,
        tool_output: str | None = None,
    ) -> None:
        """Store samples, summaries and final status of a run in one transaction."""
        from kbench.store.writes import write_result

        with self.engine.begin() as conn:
            write_result(conn, run_id, status=status, columns=columns, probe_header=probe_header,
                          summaries=summaries, warnings=warnings, error=error, tool_output=tool_output)

    def save_profile(
        self, run_id: int, *, event: str, frequency_hz: int | None, samples: int, weight: int, data: bytes,
        details: Mapping[str, Any], data_format: str = "folded", codec: str = "zlib",
    ) -> None:
        """Store (or replace) the sampled profile of run ``run_id`` (RunNotFound if there is no such run)."""
        from sqlalchemy import delete, insert, select

        from kbench.store import schema

        with self.engine.begin() as conn:
            if conn.execute(select(schema.runs.c.id).where(schema.runs.c.id == run_id)).first() is None:
                raise RunNotFound(f"no run with id {run_id}")
            conn.execute(delete(schema.profiles).where(schema.profiles.c.run_id == run_id))
            conn.execute(insert(schema.profiles).values(
                run_id=run_id, event=event, frequency_hz=frequency_hz, samples=samples, weight=weight,
                format=data_format, codec=codec, data=data, details=dict(details), created_at=_utcnow(),
            ))

    def add_warning(self, run_id: int, warning: str) -> None:
        """Append ``warning`` to a stored run's warnings (RunNotFound if there is no such run)."""
        from sqlalchemy import select, update

        from kbench.store import schema

        with self.engine.begin() as conn:
            row = conn.execute(select(schema.runs.c.warnings).where(schema.runs.c.id == run_id)).first()
            if row is None:
                raise RunNotFound(f"no run with id {run_id}")
            conn.execute(update(schema.runs).where(schema.runs.c.id == run_id)
                         .values(warnings=[*(row[0] or []), warning]))

    # -- reading -----------------------------------------------------------------

    def load_profile(self, run_id: int) -> dict[str, Any] | None:
        """The profile row of a run (``data`` compressed as ``codec`` says), or None."""
        return reads.load_profile(self._query, run_id)

    def kernel_config(self, digest: str) -> str | None:
        """A kernel's ``.config`` stored under its digest (``targets.config_digest``), or None."""
        return reads.kernel_config(self._query, digest)

    def profiled_runs(self, run_ids: list[int]) -> set[int]:
        return reads.profiled_runs(self._query, run_ids)

    def stored_digests(self, digests: Collection[str]) -> dict[str, int]:
        """digest -> id of the runs stored with those content digests (``reads.stored_digests``)."""
        return reads.stored_digests(self._query, digests)

    def get_run(self, run_id: int) -> RunRecord:
        return reads.get_run(self._query, run_id, self.spill_dir, dialect=self.dialect, where=self.where)

    def load_samples(self, run_id: int) -> dict[str, np.ndarray]:
        """Every stored column of a run, in the order the samples were taken."""
        return reads.load_samples(self._query, run_id, self.where, self.spill_dir)

    def list_runs(
        self,
        *,
        benchmark: str | None = None,
        status: str | None = None,
        kernel_release: str | None = None,
        tag: str | None = None,
        limit: int | None = 50,
    ) -> list[dict[str, Any]]:
        """Newest first: id, benchmark, status, n, started, kernel, median and unit. Every
        filter is part of the query, so ``limit`` (None: no limit) counts matching runs."""
        return reads.list_runs(self._query, self.dialect, benchmark=benchmark, status=status,
                               kernel_release=kernel_release, tag=tag, limit=limit, spill_dir=self.spill_dir,
                               where=self.where)

    def save_calibration(
        self, *, benchmark: str, metric: str, target: str, params: Mapping[str, Any],
        trials: Mapping[str, list[float]], run_ids: list[int], sigma_log: float, mde: list[dict[str, Any]],
    ) -> int:
        from sqlalchemy import insert

        from kbench.store import schema

        with self.engine.begin() as conn:
            result = conn.execute(
                insert(schema.calibrations).values(
                    benchmark=benchmark, metric=metric, target=target, params=dict(params),
                    trials=dict(trials), run_ids=run_ids, sigma_log=sigma_log, mde=mde, created_at=_utcnow(),
                )
            )
            return inserted_id(result)

    def latest_calibration(self, benchmark: str, target: str) -> dict[str, Any] | None:
        """The newest A/A calibration of ``benchmark`` on ``target``, or None (plain SQL, as the
        run readings: a read-only SQLite store answers without SQLAlchemy)."""
        from kbench.store.reads import latest_calibration

        return latest_calibration(self._query, benchmark, target)

    def create_bisection(
        self, *, repo: str, good: str, bad: str, command: str, build: str, params: Mapping[str, Any],
    ) -> int:
        from sqlalchemy import insert

        from kbench.store import schema

        now = _utcnow()
        with self.engine.begin() as conn:
            result = conn.execute(
                insert(schema.bisections).values(
                    repo=repo, good=good, bad=bad, command=command, build=build, status="running",
                    params=dict(params), refs=None, steps=[], result=None, created_at=now, updated_at=now,
                )
            )
            return inserted_id(result)

    def update_bisection(self, bisection_id: int, **values: Any) -> None:
        """Set columns (status, refs, steps, result, params) of a bisection; stamps updated_at."""
        from sqlalchemy import update

        from kbench.store import schema

        allowed = {"status", "refs", "steps", "result", "params"}
        if not values.keys() <= allowed:
            raise ValueError(f"cannot update {sorted(values.keys() - allowed)} of a bisection")
        with self.engine.begin() as conn:
            result = conn.execute(
                update(schema.bisections)
                .where(schema.bisections.c.id == bisection_id)
                .values(**values, updated_at=_utcnow())
            )
            if result.rowcount == 0:
                raise BisectionNotFound(f"no bisection with id {bisection_id}")

    def get_bisection(self, bisection_id: int | None = None) -> dict[str, Any]:
        """Bisection ``bisection_id``, or the newest one when None."""
        from sqlalchemy import select

        from kbench.store import schema

        query = select(schema.bisections)
        if bisection_id is not None and not storable_id(bisection_id):
            raise BisectionNotFound(f"no bisection with id {bisection_id}")
        if bisection_id is None:
            query = query.order_by(schema.bisections.c.id.desc()).limit(1)
        else:
            query = query.where(schema.bisections.c.id == bisection_id)
        with self.engine.connect() as conn:
            row = conn.execute(query).mappings().first()
        if row is None:
            raise BisectionNotFound("no bisection in this database" if bisection_id is None
                                    else f"no bisection with id {bisection_id}")
        return dict(row)

    def store_pending_run(self, pending: PendingRun) -> tuple[int, str]:
        """Store a run measured earlier (a recovery file, an import); see store_pending_runs."""
        return self.store_pending_runs([pending])[0]

    def store_pending_runs(self, pending_runs: Sequence[PendingRun]) -> list[tuple[int, str]]:
        """Store runs measured earlier (a recovery file, the entries of an imported file),
        all or none, in one transaction.

        Returns (run id, how) for each: ``exists`` when the same run is already stored
        (nothing written): one with the same content digest (``PendingRun.digest``), or,
        among runs stored without a digest (imported before schema v6), one with the same
        benchmark, parameters, start (within 1 ms), sample count and status; ``completed``
        when the run it names in this database was still waiting for its samples (running,
        abandoned, or failed because they could not be stored; none stored; same benchmark
        and start) and now has them; ``added`` for a new run.
        """
        from sqlalchemy.exc import IntegrityError

        from kbench.store.pending import store_pending_runs

        try:
            with self.engine.begin() as conn:
                return store_pending_runs(conn, pending_runs)
        except IntegrityError:
            # Another kbench stored one of these at the same moment (the digest is unique):
            # looking again finds it.
            with self.engine.begin() as conn:
                return store_pending_runs(conn, pending_runs)

    def count_runs(self) -> int:
        from sqlalchemy import func, select

        from kbench.store import schema

        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(schema.runs)).scalar_one())


SCHEMA_LOCK_KEY = 0x6B62656E6368  # "kbench"
"""PostgreSQL advisory lock that serialises creating and migrating the schema."""
SCHEMA_LOCK_WAIT_MS = 120_000
"""How long a SQLite open waits for another process's schema work (a migration of a big file)."""


def _recovered_note(rows: int) -> str:
    return f"the {rows} samples it took before were recovered from its spill file"


def _schema_lock(conn: Connection) -> None:
    """Hold the database's schema lock until ``conn``'s transaction ends, so that only one
    process at a time creates or migrates tables. SQLite: the write lock (BEGIN IMMEDIATE:
    SQLite's own DDL checks are not atomic with the CREATE); PostgreSQL: an advisory lock."""
    if conn.dialect.name == "sqlite":
        usual = int(conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one())
        conn.exec_driver_sql(f"PRAGMA busy_timeout = {SCHEMA_LOCK_WAIT_MS}")
        try:
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        finally:  # the connection goes back to the pool: later statements wait as long as before
            conn.exec_driver_sql(f"PRAGMA busy_timeout = {usual}")
    elif conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({SCHEMA_LOCK_KEY})")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA foreign_keys=ON")
        _use_wal(cursor)
    finally:
        cursor.close()


def _use_wal(cursor: Any) -> None:
    """Put the file in WAL mode (kept in the file: done once). Several processes opening a
    new file at once race to switch it, and SQLite answers the losers "database is locked"
    at once, without waiting: they look again until the winner is done."""
    import sqlite3
    import time

    deadline = time.monotonic() + SCHEMA_LOCK_WAIT_MS / 1000
    pause = 0.005
    while True:
        try:
            if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
        time.sleep(pause)
        pause = min(2 * pause, 0.25)


def _sqlite_read_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA query_only=ON")
    cursor.close()


def _make_parent(path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(
            f"results database {path}: cannot create its directory {path.parent}: {exc.strerror or exc} "
            "(give --db with a path you can write, or set KBENCH_DB)"
        ) from exc


def _check_writable(path: Path) -> None:
    reason = read_only_reason(path)
    if reason is not None and not path.exists():
        raise StoreError(f"results database {path} cannot be created here ({reason}); give --db with a path you "
                         "can write, or set KBENCH_DB")
    if reason is not None:
        raise StoreError(f"results database {path} is read-only ({reason}); commands that only read it (results, "
                         "show, export) still work; give --db with a database you can write")


def _missing_directory(path: Path) -> str:
    """Reading a database whose directory does not exist (a mistyped --db, most likely)."""
    parent = path.parent
    while not parent.exists() and parent.parent != parent:
        parent = parent.parent
    missing = path.parent if parent.is_dir() else parent
    reason = "does not exist" if parent.is_dir() else "is not a directory"
    return (f"results database {path}: no such database ({missing} {reason}); "
            "nothing was created (check --db or KBENCH_DB)")


def _read_only_sqlite_uri(path: Path) -> str:
    """The URI that opens an existing file read-only. On a read-only file system the file
    is opened as immutable: SQLite cannot make the lock files a WAL database needs there,
    and nothing can change it."""
    immutable = "&immutable=1" if _on_read_only_file_system(path) else ""
    return f"file:{quote(str(path.resolve()))}?mode=ro{immutable}"


def _read_only_sqlite_engine(path: Path) -> Engine:
    from sqlalchemy import create_engine

    return create_engine(f"sqlite:///{_read_only_sqlite_uri(path)}&uri=true")


def _on_read_only_file_system(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _missing_columns(conn: Connection) -> list[str]:
    """``reads.missing_columns`` of the database behind ``conn``, inside its transaction."""
    from sqlalchemy import text

    def query(sql: str, params: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [dict(row) for row in conn.execute(text(sql), dict(params)).mappings()]

    return reads.missing_columns(query, conn.dialect.name)
