"""The store's errors, and one line for any database error (no database library imported)."""

from __future__ import annotations

import sqlite3
import sys

from kbench import exit_codes
from kbench.exit_codes import KbenchError

DAMAGED_ADVICE = (
    "the file is damaged; kbench will not write to it: restore a copy, or save what is readable "
    "with `sqlite3 FILE .recover | sqlite3 NEW.db`"
)
_ADVICE = (
    ("database or disk is full", "the file system holding it is full"),
    ("disk image is malformed", DAMAGED_ADVICE),
    ("file is not a database", DAMAGED_ADVICE),
    ("attempt to write a readonly database",
     "it cannot be written here; commands that only read it (results, show, export) still work"),
    ("readonly database", "it cannot be written here; commands that only read it (results, show, export) still work"),
    ("unable to open database file", "check that the file and its directory exist and can be read"),
)


class StoreError(KbenchError, RuntimeError):
    """The database cannot be used as asked (missing run, newer schema, bad URL, or any
    error of the database itself: full disk, damaged file, read-only file)."""

    exit_code = exit_codes.STORE_FAILED


class RunNotFound(StoreError):
    """No run has the requested id."""

    exit_code = exit_codes.NOT_FOUND


class BisectionNotFound(RunNotFound):
    """No bisection has the requested id (exit code as for a missing run)."""


ROW_ID_MAX = 2**63 - 1
"""The largest row id SQLite and PostgreSQL's BIGINT hold: a larger one names no row."""


def storable_id(row_id: int) -> bool:
    """Whether ``row_id`` can be a row's id at all (a database driver refuses a larger one
    with an overflow, which is not an answer to "is there such a row")."""
    return -ROW_ID_MAX - 1 <= row_id <= ROW_ID_MAX


def database_error_message(exc: BaseException, where: str = "") -> str | None:
    """One line for an error raised by SQLAlchemy or a database driver (None for others):
    what the database said, and what to do about it when that is known."""
    sqlalchemy_errors = sys.modules.get("sqlalchemy.exc")
    if sqlalchemy_errors is not None and isinstance(exc, sqlalchemy_errors.SQLAlchemyError):
        reason: BaseException = getattr(exc, "orig", None) or exc
    elif isinstance(exc, sqlite3.Error) or type(exc).__module__.split(".")[0] in ("psycopg", "psycopg2"):
        reason = exc
    else:
        return None
    text = (str(reason).strip().splitlines() or [type(reason).__name__])[0]
    text = text.split(" [SQL:")[0].split("(Background on this error")[0].strip()
    advice = next((hint for key, hint in _ADVICE if key in text), "")
    place = f"results database {where}" if where else "results database"
    return f"{place}: {text}" + (f" ({advice})" if advice else "")
