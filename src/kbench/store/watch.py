"""``kbench watch``'s bookkeeping in the results store: watches, the commits they measured, findings.

A *watch* follows branches of one repository with one build command and one job. Each
commit it meets is a row of ``watch_commits`` (its state, the error of a failed build, the
runs its job stored). A *finding* is a candidate change point on its way to a verdict:
``suspected`` → ``confirming`` → (``bisecting`` →) ``verifying`` → ``confirmed``, or
``dropped`` (did not hold when measured again; remembered, so it is not re-tested) or
``failed`` (could not be measured). A confirmed regression has a ``status``: ``open``,
``fixed`` (``fixed_in``) or ``reverted`` (``reverted_in``). Every step is written as it is
taken, so a watch that is killed goes on from there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, insert, select, update

from kbench.store import schema

COMMIT_STATES = ("queued", "building", "measuring", "measured", "build-failed", "failed", "untested")
FINDING_STATES = ("suspected", "confirming", "bisecting", "verifying", "confirmed", "dropped", "failed")
UNFINISHED = ("suspected", "confirming", "bisecting", "verifying")
OPEN, FIXED, REVERTED = "open", "fixed", "reverted"
REGRESSION, FIX = "regression", "fix"


def utcnow() -> datetime:
    return datetime.now(UTC)


class WatchNotFound(LookupError):
    """No such watch in this database."""


class WatchStore:
    """Watch queries over the results database's engine (SQLite or PostgreSQL, schema v6)."""

    def __init__(self, engine: Engine):
        self.engine = engine

    # -- watches -----------------------------------------------------------------
    def open_watch(
        self, *, key: str, repo: str, branches: list[str], build: str, job_path: str, job_text: str,
        options: Mapping[str, Any],
    ) -> tuple[dict[str, Any], bool]:
        """The watch with ``key`` (its job text and options brought up to date), or a new one;
        and whether it is new."""
        w = schema.watches
        now = utcnow()
        with self.engine.begin() as conn:
            row = conn.execute(select(w).where(w.c.key == key)).mappings().first()
            if row is None:
                conn.execute(insert(w).values(
                    key=key, repo=repo, branches=list(branches), build=build, job_path=job_path, job_text=job_text,
                    options=dict(options), heads={}, events=[], owner=None, created_at=now, updated_at=now,
                ))
                created = True
            else:
                conn.execute(update(w).where(w.c.key == key).values(job_text=job_text, options=dict(options),
                                                                    updated_at=now))
                created = False
            found = conn.execute(select(w).where(w.c.key == key)).mappings().one()
        return dict(found), created

    def find_watch(self, key: str) -> dict[str, Any] | None:
        """The watch with ``key``, or None (nothing is written)."""
        w = schema.watches
        with self.engine.connect() as conn:
            row = conn.execute(select(w).where(w.c.key == key)).mappings().first()
        return dict(row) if row is not None else None

    def get_watch(self, watch_id: int) -> dict[str, Any]:
        w = schema.watches
        with self.engine.connect() as conn:
            row = conn.execute(select(w).where(w.c.id == watch_id)).mappings().first()
        if row is None:
            raise WatchNotFound(f"no watch with id {watch_id}")
        return dict(row)

    def watches(self) -> list[dict[str, Any]]:
        w = schema.watches
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(select(w).order_by(w.c.id)).mappings()]

    def update_watch(self, watch_id: int, **values: Any) -> None:
        allowed = {"heads", "events", "owner", "job_text", "options"}
        if not values.keys() <= allowed:
            raise ValueError(f"cannot update {sorted(values.keys() - allowed)} of a watch")
        w = schema.watches
        with self.engine.begin() as conn:
            conn.execute(update(w).where(w.c.id == watch_id).values(**values, updated_at=utcnow()))

    # -- commits -----------------------------------------------------------------
    def add_commit(self, watch_id: int, branch: str, sha: str, *, parent: str | None, subject: str,
                   state: str = "queued") -> None:
        """Record a commit the watch met on ``branch`` (nothing when it is already there)."""
        if state not in COMMIT_STATES:
            raise ValueError(f"commit state must be one of {COMMIT_STATES}, got {state!r}")
        c = schema.watch_commits
        now = utcnow()
        with self.engine.begin() as conn:
            exists = conn.execute(select(c.c.id).where(
                (c.c.watch_id == watch_id) & (c.c.branch == branch) & (c.c.sha == sha))).first()
            if exists is None:
                conn.execute(insert(c).values(watch_id=watch_id, branch=branch, sha=sha, parent=parent,
                                              subject=subject, state=state, error=None, run_ids={},
                                              found_at=now, updated_at=now))

    def update_commit(self, watch_id: int, sha: str, *, branch: str | None = None, **values: Any) -> None:
        """Set ``state``, ``error``, ``run_ids`` of a commit (on every branch it is on, or one)."""
        allowed = {"state", "error", "run_ids"}
        if not values.keys() <= allowed:
            raise ValueError(f"cannot update {sorted(values.keys() - allowed)} of a watched commit")
        if "state" in values and values["state"] not in COMMIT_STATES:
            raise ValueError(f"commit state must be one of {COMMIT_STATES}, got {values['state']!r}")
        c = schema.watch_commits
        where = (c.c.watch_id == watch_id) & (c.c.sha == sha)
        if branch is not None:
            where &= c.c.branch == branch
        with self.engine.begin() as conn:
            conn.execute(update(c).where(where).values(**values, updated_at=utcnow()))

    def commits(self, watch_id: int, branch: str | None = None) -> list[dict[str, Any]]:
        """The watch's commits (of one branch), in the order they were met."""
        c = schema.watch_commits
        query = select(c).where(c.c.watch_id == watch_id)
        if branch is not None:
            query = query.where(c.c.branch == branch)
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(query.order_by(c.c.id)).mappings()]

    # -- findings ----------------------------------------------------------------
    def add_finding(self, watch_id: int, **values: Any) -> int:
        f = schema.watch_findings
        now = utcnow()
        row = {"state": "suspected", "status": None, "log": [], "created_at": now, "updated_at": now,
               **values, "watch_id": watch_id}
        with self.engine.begin() as conn:
            result = conn.execute(insert(f).values(**row))
            key = result.inserted_primary_key
            assert key is not None
            return int(key[0])

    def update_finding(self, finding_id: int, *, log: str | None = None, **values: Any) -> None:
        """Set columns of a finding; ``log`` appends one line to its log."""
        if "state" in values and values["state"] not in FINDING_STATES:
            raise ValueError(f"finding state must be one of {FINDING_STATES}, got {values['state']!r}")
        f = schema.watch_findings
        with self.engine.begin() as conn:
            if log is not None:
                current = conn.execute(select(f.c.log).where(f.c.id == finding_id)).scalar_one()
                values["log"] = [*list(current or []), log]
            conn.execute(update(f).where(f.c.id == finding_id).values(**values, updated_at=utcnow()))

    def set_triage(self, finding_id: int, status: str | None, reason: str, by: str) -> None:
        """The status a person set on a finding (None: take it back), with why and by whom in its log.
        The finding's ``updated_at`` stays: it is when the watch concluded, which reports sort by."""
        from kbench.contract.vocabulary import TRIAGE_STATUSES

        if status is not None and status not in TRIAGE_STATUSES:
            raise ValueError(f"a finding's status must be one of {TRIAGE_STATUSES}, got {status!r}")
        f = schema.watch_findings
        now = utcnow()
        line = (f"{now:%Y-%m-%d %H:%M} UTC: {by} set the status to {status!r}: {reason}" if status is not None
                else f"{now:%Y-%m-%d %H:%M} UTC: {by} took the status back" + (f": {reason}" if reason else ""))
        with self.engine.begin() as conn:
            current = conn.execute(select(f.c.log).where(f.c.id == finding_id)).scalar_one()
            conn.execute(update(f).where(f.c.id == finding_id).values(
                triage=status, triage_reason=reason if status is not None else None,
                triage_at=now if status is not None else None, log=[*list(current or []), line]))

    def finding(self, finding_id: int) -> dict[str, Any]:
        f = schema.watch_findings
        with self.engine.connect() as conn:
            return dict(conn.execute(select(f).where(f.c.id == finding_id)).mappings().one())

    def findings(self, watch_id: int | None = None, *, states: Iterable[str] | None = None,
                 kind: str | None = None) -> list[dict[str, Any]]:
        """Findings (of one watch; in some states; of one kind), oldest first."""
        f = schema.watch_findings
        query = select(f)
        if watch_id is not None:
            query = query.where(f.c.watch_id == watch_id)
        if states is not None:
            query = query.where(f.c.state.in_(list(states)))
        if kind is not None:
            query = query.where(f.c.kind == kind)
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(query.order_by(f.c.id)).mappings()]
