"""The JSON kbench prints (every ``--json``, ``--format json``): one schema version, UTC times.

Every document carries ``schema_version`` (an integer, the same for every command), raised
when a key is renamed or removed or its meaning changes; new keys do not raise it. A
document that is a list (``kbench results --json``, ``kbench list --json``) carries it in
each of its objects. Times are ISO-8601 in UTC with a ``Z``: ``2026-11-26T17:00:00Z``
(fractions of a second when there are some).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, date, datetime
from pathlib import PurePath
from typing import Any, Final

SCHEMA_VERSION: Final = 1
"""The version of kbench's JSON outputs."""


def utc_timestamp(moment: datetime) -> str:
    """``2026-11-26T17:00:00Z``; a naive datetime is taken as UTC (the store keeps UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def plain(value: Any) -> Any:
    """``value`` with datetimes as UTC timestamps, tuples and sets as lists, paths as text,
    mapping keys as text; other objects are left to the encoder's ``default``."""
    if isinstance(value, datetime):
        return utc_timestamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item) for item in value]
    if isinstance(value, PurePath):
        return str(value)
    return value


def document(data: Any) -> Any:
    """``data`` ready to print: ``schema_version`` first in the object (in each object of a list)."""
    data = plain(data)
    if isinstance(data, dict):
        return {"schema_version": SCHEMA_VERSION, **{k: v for k, v in data.items() if k != "schema_version"}}
    if isinstance(data, list):
        return [document(item) if isinstance(item, dict) else item for item in data]
    return data


def dumps(data: Any, *, indent: int | None = 2, allow_nan: bool = True) -> str:
    """The JSON text of ``document(data)``."""
    return json.dumps(document(data), indent=indent, default=_fallback, allow_nan=allow_nan)


def _fallback(value: Any) -> Any:
    """Numbers of numpy and other objects: their Python value, else their text."""
    item = getattr(value, "item", None)
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            pass
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    return str(value)
