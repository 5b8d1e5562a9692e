"""Whether a run stored ``running`` is still being measured, judged by whoever reads it.

A run's row names its owner (pid, boot id, host; ``owners.py``). Its kbench is gone:

- on this host: when that process no longer runs (``owners.owner_gone``);
- on another host: when the run's heartbeat is older than RUN_LEASE_S. The kbench
  measuring a run renews ``runs.heartbeat_at`` every HEARTBEAT_S (``Store``'s heartbeat);
  runs written before heartbeats existed (none) are not judged from another host;
- for a fleet trial (``runs.task_key``): also when its task is no longer running or its
  lease ended (the worker renews it; ``store/fleet.py``).

Times are the database's own (``CURRENT_TIMESTAMP``), for the heartbeat as for the
lease, so that the clocks of the hosts sharing a database do not matter. Read-only views
(``results``, ``show``, the dashboard) show the verdict; a writing open stores it
(``Store.mark_abandoned_runs``). Nothing here imports SQLAlchemy.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kbench.store.owners import owner_gone

Query = Callable[[str, Mapping[str, Any]], list[dict[str, Any]]]
"""Runs one statement with named parameters and returns its rows as dicts."""

HEARTBEAT_S = 15.0
"""How often the kbench measuring a run renews its heartbeat."""
RUN_LEASE_S = 60.0
"""A run of another host whose heartbeat is older than this is taken as abandoned (four beats missed)."""


class Liveness:
    """Judges the ``running`` rows of one reading (asks the database for its time and the
    fleet tasks' leases once, when a row needs them)."""

    def __init__(self, query: Query):
        self._query = query
        self._now: datetime | None = None
        self._tasks: dict[str, dict[str, Any] | None] = {}

    def why_gone(self, row: Mapping[str, Any]) -> str | None:
        """Why the kbench measuring ``row`` (a ``runs`` row with owner, heartbeat and task
        key) is gone, or None while it may still be measuring it."""
        pid = row.get("owner_pid")
        owner = f"kbench (pid {pid})" if row.get("owner_host") in (None, socket.gethostname()) else \
            f"kbench (pid {pid} on {row.get('owner_host')})"
        if owner_gone(pid, row.get("owner_boot_id"), row.get("owner_host"), _aware(row["started_at"])):
            return f"{owner} ended without finishing this run (killed, crashed, or the machine restarted)"
        task_key = row.get("task_key")
        if task_key:
            lost = self._lease_lost(str(task_key).split("#", 1)[0])
            if lost:
                return f"{owner} ended without finishing this run: {lost}"
        if row.get("owner_host") and row.get("owner_host") != socket.gethostname():
            beat = row.get("heartbeat_at")
            if beat is not None and self._db_now() - _aware(beat) > timedelta(seconds=RUN_LEASE_S):
                return (f"{owner} ended without finishing this run: its heartbeat stopped at "
                        f"{_aware(beat).isoformat(timespec='seconds')} (none for more than {RUN_LEASE_S:.0f} s)")
        return None

    def _lease_lost(self, task_id: str) -> str | None:
        if task_id not in self._tasks:
            try:
                rows = self._query("SELECT state, lease_expires FROM fleet_tasks WHERE id = :id", {"id": task_id})
            except Exception:  # a database without the fleet's tables (older than v5): nothing to judge by
                rows = []
            self._tasks[task_id] = rows[0] if rows else None
        task = self._tasks[task_id]
        if task is None:
            return "its fleet task is gone"
        if task["state"] != "running":
            return f"its fleet task is {task['state']}"
        expires = task.get("lease_expires")
        if expires is not None and _aware(expires) < self._db_now():
            ended = _aware(expires).isoformat(timespec="seconds")
            return f"its fleet task's lease ended at {ended} (the worker is gone)"
        return None

    def _db_now(self) -> datetime:
        if self._now is None:
            self._now = _aware(self._query("SELECT CURRENT_TIMESTAMP AS now", {})[0]["now"])
        return self._now


def _aware(value: datetime | str) -> datetime:
    """A time as the database gave it (SQLite: ISO text or a naive datetime, in UTC), with its zone."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
