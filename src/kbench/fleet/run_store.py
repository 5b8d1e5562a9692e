"""The store a fleet task hands to the engine: every run it begins carries the task's key.

The engine (``run_job``, ``run_comparison``) runs an instance exactly as ``kbench run``
does and calls ``begin_run``/``finish_run`` as usual; this store adds, for the fleet:

- the trial's ``task_key`` (unique among runs, so a trial is stored once);
- retries while the database is unreachable (the samples wait in memory meanwhile);
- fencing by attempt id (the worker's incarnation and the attempt's number): an attempt
  that lost the task's lease (its machine was presumed dead, e.g. cut from the network,
  and the task went to another attempt) begins no run, and a run it finishes is stored
  ``interrupted``, not ``complete`` (the other attempt's run is the one that counts).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import Engine, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError

from kbench.store import schema
from kbench.store.db import Store, SummaryRecord
from kbench.store.fleet import RELEASED_MARK, FleetStore, trial_key, utcnow

log = logging.getLogger("kbench.fleet")
T = TypeVar("T")
LOST_LEASE = "stored after this machine lost the task's lease (presumed dead); another attempt measures it again"


def is_connection_error(exc: BaseException) -> bool:
    """True for a database that did not answer (not for a query the database refused)."""
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


class DbRetry:
    """Call a database operation until it works or ``deadline_s`` has passed."""

    def __init__(self, deadline_s: float, *, first_delay_s: float = 0.2, max_delay_s: float = 5.0):
        self.deadline_s = deadline_s
        self.first_delay_s = first_delay_s
        self.max_delay_s = max_delay_s

    def __call__(self, operation: Callable[[], T], what: str) -> T:
        deadline = time.monotonic() + self.deadline_s
        delay = self.first_delay_s
        while True:
            try:
                return operation()
            except (OperationalError, InterfaceError, DBAPIError) as exc:
                if not is_connection_error(exc) or time.monotonic() + delay > deadline:
                    raise
                reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
                log.warning("database unreachable while %s (%s); trying again in %.1f s", what, reason, delay)
                time.sleep(delay)
                delay = min(delay * 2, self.max_delay_s)


class TrialTaken(RuntimeError):
    """Another attempt holds this trial's key: this attempt must not measure it."""


class FleetRunStore(Store):
    """A ``Store`` whose runs are the trials ``trials`` of fleet task ``task_id``, in order."""

    def __init__(
        self, engine: Engine, *, fleet: FleetStore, task_id: str, incarnation: str, trials: Iterable[int],
        retry: DbRetry, attempt: int | None = None,
    ):
        super().__init__(engine)
        self.fleet = fleet
        self.task_id = task_id
        self.incarnation = incarnation
        self.attempt = attempt
        self._trials = iter(trials)
        self.retry = retry
        self.run_ids: list[int] = []
        self.measured_at: datetime | None = None

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
        """``Store.begin_run`` with the key of this task's next trial (``task_key`` is ignored)."""
        key = trial_key(self.task_id, next(self._trials))
        tag_list = list(tags)
        if not self.retry(self._holds_lease, "checking the task's lease"):
            raise TrialTaken(f"attempt {self.attempt} of task {self.task_id} no longer holds its lease (fenced off): "
                             f"trial {key} is another attempt's to measure")

        def begin() -> int:
            try:
                return Store.begin_run(
                    self, benchmark=benchmark, metric=metric, unit=unit, direction=direction, params=params,
                    request=request, sysinfo=sysinfo, target=target, tags=tag_list, commit=commit, label=label,
                    task_key=key, started_at=started_at,
                )
            except IntegrityError:
                # Another attempt's run holds the key (or an earlier try of ours committed and only
                # its answer was lost): either way this attempt stops; a later one releases the key.
                raise TrialTaken(f"trial {key} is already stored or being measured by another attempt") from None

        run_id = self.retry(begin, f"recording run {key}")
        self.run_ids.append(run_id)
        return run_id

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
        self.measured_at = utcnow()
        records = list(summaries)
        if status == "complete" and not self.retry(self._holds_lease, "checking the task's lease"):
            log.warning("task %s: the result of attempt %s refused (fencing): the task's lease went to another "
                        "attempt; run %d is stored interrupted", self.task_id, self.attempt, run_id)
            status, error = "interrupted", LOST_LEASE

        def finish() -> None:
            try:
                Store.finish_run(self, run_id, status=status, columns=columns, probe_header=probe_header,
                                 summaries=records, warnings=warnings, error=error, tool_output=tool_output)
            except IntegrityError:
                # Samples already there: an earlier try committed and only its answer was lost.
                if self._status(run_id) == "running":
                    raise

        self.retry(finish, f"storing run {run_id}")
        if status == "complete" and not self.retry(self._holds_lease, "checking the task's lease"):
            self.retry(lambda: self._mark_lost(run_id), f"marking run {run_id}")

    def _holds_lease(self) -> bool:
        return self.fleet.holds_lease(self.task_id, self.incarnation, self.attempt)

    def _status(self, run_id: int) -> str | None:
        runs = schema.runs
        with self.engine.connect() as conn:
            return conn.execute(select(runs.c.status).where(runs.c.id == run_id)).scalar()

    def _mark_lost(self, run_id: int) -> None:
        """The lease went to another attempt while this run was being stored: if that attempt
        released this run's key, the run it measures counts, not this one."""
        runs = schema.runs
        with self.engine.begin() as conn:
            conn.execute(
                update(runs).where((runs.c.id == run_id) & runs.c.task_key.contains(RELEASED_MARK))
                .values(status="interrupted", error=LOST_LEASE)
            )
