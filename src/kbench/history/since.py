"""``--since``: a date, a date and time (UTC unless it says otherwise), or an age (7d, 12h, 2w)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

_AGE = re.compile(r"^(\d+(?:\.\d+)?)\s*(m|h|d|w)$")
_UNIT = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """The moment ``text`` names, as an aware UTC datetime; ValueError naming the input otherwise."""
    stripped = text.strip()
    age = _AGE.match(stripped)
    if age:
        try:
            return (now or datetime.now(UTC)) - float(age.group(1)) * _UNIT[age.group(2)]
        except OverflowError:  # beyond timedelta's 10⁹ days, or before year 1
            raise ValueError(f"{text!r} reaches back before the year 1; give a date, or a smaller age") from None
    try:
        moment = datetime.fromisoformat(stripped)
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a date (2026-11-20, 2026-11-20T03:00) nor an age (30m, 12h, 7d, 2w)"
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def as_utc(moment: datetime) -> datetime:
    """Stored times come back naive from SQLite: they are UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
