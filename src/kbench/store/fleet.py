"""The fleet's bookkeeping in the results store: machines, jobs, tasks, leases.

Celery and Redis carry only task ids; what a task is, who runs it and how it ended lives
here, next to the runs it produced. Liveness is judged on the database's clock
(``now()``), never on a worker's, so machines with skewed clocks agree on whose lease
has expired. Every state change that two parties could race for is a compare-and-set
under a row lock (``SELECT … FOR UPDATE``), which is why the fleet needs PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, bindparam, case, delete, func, insert, select, update
from sqlalchemy.engine import Connection

from kbench.exit_codes import KbenchError
from kbench.store import schema

TASK_STATES = ("queued", "running", "done", "failed", "cancelled")
FINISHED_STATES = ("done", "failed", "cancelled")
ATTENTION_ORDER = ("running", "failed", "queued", "cancelled", "done")
"""The order ``fleet status JOB`` lists a long job's tasks in: what needs a look first."""
RELEASED_MARK = "~"
"""A run key that holds this mark was released by a lost attempt: ``<task>#<trial>~<run id>``."""


class MachineNameTaken(KbenchError, RuntimeError):
    """Another live worker already answers to this machine name."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def trial_key(task_id: str, trial: int) -> str:
    """``runs.task_key`` of a task's trial: unique, so a trial is stored once however often delivered."""
    return f"{task_id}#{trial}"


@dataclass(frozen=True)
class PlannedTask:
    """A task as ``kbench fleet submit`` plans it, before it is stored and sent."""

    id: str
    queue: str
    kind: str  # "instance" or "compare", or a watch's: "watch-commit", "watch-compare", "watch-build", "watch-round"
    instance_ids: tuple[str, ...]
    label: str
    repeat_index: int
    spec: dict[str, Any] | None = None  # a watch task's repository, commits, build, ...


@dataclass(frozen=True)
class Claim:
    """What a worker may do with a delivered task.

    ``outcome``: ``run`` (this attempt owns the task), ``finished`` (done, failed or
    cancelled already: acknowledge and forget), ``held`` (another live machine runs it:
    this delivery is a duplicate), ``cancelled`` (the job was cancelled before it
    started), ``failed`` (its earlier attempts were all lost) or ``unknown`` (no such task).
    """

    outcome: str
    task: dict[str, Any] = field(default_factory=dict)
    job: dict[str, Any] = field(default_factory=dict)
    detail: str = ""


class FleetStore:
    """Fleet queries over the results database's engine (schema v5 tables)."""

    def __init__(self, engine: Engine, *, lease_s: float, max_attempts: int = 3):
        if engine.dialect.name != "postgresql":
            raise ValueError("the fleet keeps its state in PostgreSQL")
        self.engine = engine
        self.lease = timedelta(seconds=lease_s)
        self.max_attempts = max_attempts

    # -- machines ----------------------------------------------------------------

    def register_machine(
        self, *, name: str, queue: str, incarnation: str, sysinfo: dict[str, Any], machine_id: int | None,
        allow_command: bool, pid: int,
    ) -> None:
        """Record (or take over) machine ``name``; MachineNameTaken if a live worker has it."""
        m = schema.fleet_machines
        cpu = sysinfo.get("cpu") or {}
        values = dict(
            queue=queue, incarnation=incarnation, machine_id=machine_id, hostname=sysinfo.get("hostname"),
            cpu_model=cpu.get("model"), cpu_count=cpu.get("count"), memory_bytes=sysinfo.get("memory_bytes"),
            kernel_release=(sysinfo.get("kernel") or {}).get("release"),
            virtualization=(sysinfo.get("virtualization") or {}).get("vm"), sysinfo=sysinfo,
            allow_command=allow_command, pid=pid, state="idle", current_task=None,
            started_at=utcnow(), last_seen=func.now(),
        )
        with self.engine.begin() as conn:
            conn.exec_driver_sql("LOCK TABLE fleet_machines IN SHARE ROW EXCLUSIVE MODE")
            row = conn.execute(
                select(m.c.incarnation, m.c.state, m.c.hostname, m.c.pid,
                       (func.now() - m.c.last_seen).label("age")).where(m.c.name == name)
            ).mappings().first()
            if row is None:
                conn.execute(insert(m).values(name=name, **values))
                return
            if row["state"] != "stopped" and row["age"] < self.lease:
                raise MachineNameTaken(
                    f"a worker named {name!r} is running on {row['hostname']} (pid {row['pid']}, "
                    f"last seen {row['age'].total_seconds():.0f} s ago); give this one another --name"
                )
            conn.execute(update(m).where(m.c.name == name).values(**values))

    def heartbeat(self, name: str, incarnation: str, *, current_task: str | None) -> bool:
        """Say this worker is alive; False when another worker took the name over."""
        m = schema.fleet_machines
        with self.engine.begin() as conn:
            result = conn.execute(
                update(m).where((m.c.name == name) & (m.c.incarnation == incarnation)).values(
                    last_seen=func.now(), current_task=current_task, state="busy" if current_task else "idle",
                )
            )
        return result.rowcount == 1

    def machine_stopped(self, name: str, incarnation: str) -> None:
        m = schema.fleet_machines
        with self.engine.begin() as conn:
            conn.execute(
                update(m).where((m.c.name == name) & (m.c.incarnation == incarnation))
                .values(state="stopped", current_task=None, last_seen=func.now())
            )

    def machines(self) -> list[dict[str, Any]]:
        """Every machine with ``age`` (since last seen) and ``state`` ``offline`` when its
        heartbeat is older than a lease; ``job`` is the job of its current task (none for an
        offline machine: its task is presumed lost, and queued again)."""
        m, t = schema.fleet_machines, schema.fleet_tasks
        query = (
            select(m, (func.now() - m.c.last_seen).label("age"), t.c.job_id.label("job"), t.c.label.label("task_label"))
            .select_from(m.outerjoin(t, t.c.id == m.c.current_task))
            .order_by(m.c.queue, m.c.name)
        )
        with self.engine.connect() as conn:
            rows = [dict(r) for r in conn.execute(query).mappings()]
        for row in rows:
            if row["state"] != "stopped" and row["age"] >= self.lease:
                row.update(state="offline", current_task=None, job=None, task_label=None)
        return rows

    def live_queues(self) -> set[str]:
        """Queues served by at least one machine seen within a lease."""
        m = schema.fleet_machines
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(m.c.queue).where((m.c.state != "stopped") & (m.c.last_seen > func.now() - self.lease))
            )
            return {row[0] for row in rows}

    # -- jobs and tasks ----------------------------------------------------------

    def create_job(
        self, *, job_id: str, name: str, job_text: str, queues: Sequence[str], repeat: int,
        compare: dict[str, Any] | None, submitted_by: str, tasks: Sequence[PlannedTask],
        inputs: dict[str, Any] | None = None,
    ) -> None:
        """The job and all its tasks, ``queued`` and not yet sent, in one transaction; ``inputs``:
        the manifest of what it carries (``kbench.fleet.inputs``), stored already."""
        now = utcnow()
        with self.engine.begin() as conn:
            conn.execute(insert(schema.fleet_jobs).values(
                id=job_id, name=name, job_text=job_text, queues=list(queues), repeat=repeat, compare=compare,
                submitted_by=submitted_by, submitted_at=now, cancelled_at=None, inputs=inputs,
            ))
            if tasks:
                conn.execute(insert(schema.fleet_tasks), [
                    dict(id=task.id, job_id=job_id, queue=task.queue, kind=task.kind,
                         instance_ids=list(task.instance_ids), label=task.label, repeat_index=task.repeat_index,
                         state="queued", attempts=0, cancel_requested=False, errors=[], run_ids=[], created_at=now,
                         spec=task.spec)
                    for task in tasks
                ])

    def mark_published(self, sent: Iterable[tuple[str, datetime]]) -> None:
        with self.engine.begin() as conn:
            _mark_published(conn, sent)

    def unpublished(self, older_than: timedelta) -> list[tuple[str, str]]:
        """(task id, queue) of queued tasks that no message was sent for within ``older_than``."""
        t = schema.fleet_tasks
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(t.c.id, t.c.queue).where(
                    (t.c.state == "queued") & t.c.published_at.is_(None) & (t.c.created_at < func.now() - older_than)
                )
            )
            return [(row[0], row[1]) for row in rows]

    def send_unpublished(
        self, older_than: timedelta, send: Callable[[list[tuple[str, str]]], list[tuple[str, datetime]]],
        *, limit: int = 1000,
    ) -> list[tuple[str, datetime]]:
        """Send (``send``) the messages nobody sent: queued tasks without one for ``older_than``
        whose job had none sent meanwhile either (its submitter, still sending a long job, marks
        each batch it sends). The rows stay locked (``SKIP LOCKED``) until they are marked sent,
        so two workers never send the same ones; what ``send`` sent before it failed (the
        exception's ``sent``) is marked too. Returns (task id, when sent)."""
        t = schema.fleet_tasks
        sibling = t.alias("sibling")
        recent = select(sibling.c.id).where(
            (sibling.c.job_id == t.c.job_id) & (sibling.c.published_at > func.now() - older_than)).exists()
        failure: Exception | None = None
        with self.engine.begin() as conn:
            rows = conn.execute(
                select(t.c.id, t.c.queue).where(
                    (t.c.state == "queued") & t.c.published_at.is_(None) & (t.c.created_at < func.now() - older_than)
                    & ~recent
                ).order_by(t.c.created_at).limit(limit).with_for_update(of=t, skip_locked=True)
            ).all()
            if not rows:
                return []
            try:
                sent = send([(row[0], row[1]) for row in rows])
            except Exception as exc:
                failure, sent = exc, list(getattr(exc, "sent", []))
            _mark_published(conn, sent)
        if failure is not None:
            raise failure
        return sent

    def queued(self, job_id: str) -> list[tuple[str, str]]:
        """(task id, queue) of the job's tasks still waiting to start."""
        t = schema.fleet_tasks
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.id, t.c.queue).where((t.c.job_id == job_id) & (t.c.state == "queued")))
            return [(row[0], row[1]) for row in rows]

    def claim(self, task_id: str, *, machine: str, incarnation: str) -> Claim:
        """Take task ``task_id`` for this attempt, or say why not (see ``Claim``).

        A task left ``running`` by a machine whose lease expired (or by this same worker,
        which runs one task at a time and so has lost it) counts as a lost attempt; after
        ``max_attempts`` the task is ``failed`` instead of started again.
        """
        t, j = schema.fleet_tasks, schema.fleet_jobs
        with self.engine.begin() as conn:
            row = conn.execute(
                select(t, (t.c.lease_expires < func.now()).label("lease_over")).where(t.c.id == task_id)
                .with_for_update(of=t)
            ).mappings().first()
            if row is None:
                return Claim("unknown", detail=f"no task {task_id} in the store")
            task = dict(row)
            job = dict(conn.execute(select(j).where(j.c.id == task["job_id"])).mappings().one())
            if task["state"] in FINISHED_STATES:
                return Claim("finished", task, job, detail=task["state"])
            if job["cancelled_at"] is not None or task["cancel_requested"]:
                conn.execute(update(t).where(t.c.id == task_id).values(
                    state="cancelled", lease_owner=None, finished_at=utcnow()))
                return Claim("cancelled", task, job)
            errors = list(task["errors"] or [])
            if task["state"] == "running":
                if task["lease_owner"] != incarnation and not task["lease_over"]:
                    return Claim("held", task, job, detail=f"running on {task['machine']}")
                errors.append(_lost(task))
            if task["attempts"] >= self.max_attempts:
                error = errors[-1]["error"] if errors else "no attempts left"
                conn.execute(update(t).where(t.c.id == task_id).values(
                    state="failed", error=error, errors=errors, lease_owner=None, finished_at=utcnow()))
                return Claim("failed", task, job, detail=error)
            conn.execute(update(t).where(t.c.id == task_id).values(
                state="running", attempts=t.c.attempts + 1, machine=machine, lease_owner=incarnation,
                lease_expires=func.now() + self.lease, errors=errors, started_at=utcnow(),
            ))
            task.update(state="running", attempts=task["attempts"] + 1, machine=machine, errors=errors)
            return Claim("run", task, job)

    def holds_lease(self, task_id: str, incarnation: str, attempt: int | None = None) -> bool:
        """Whether the worker ``incarnation`` (in its attempt number ``attempt``, if given) still
        holds the task's lease: the fence a late result must pass."""
        t = schema.fleet_tasks
        with self.engine.connect() as conn:
            row = conn.execute(
                select(t.c.lease_owner, t.c.attempts).where((t.c.id == task_id) & (t.c.state == "running"))
            ).first()
        return row is not None and row[0] == incarnation and attempt in (None, row[1])

    def renew_leases(self, incarnation: str, task_ids: Iterable[str]) -> set[str]:
        """Extend this worker's leases on ``task_ids``; the ids whose lease it still holds."""
        ids = list(task_ids)
        if not ids:
            return set()
        t = schema.fleet_tasks
        with self.engine.begin() as conn:
            rows = conn.execute(
                update(t).where(t.c.id.in_(ids) & (t.c.lease_owner == incarnation) & (t.c.state == "running"))
                .values(lease_expires=func.now() + self.lease).returning(t.c.id)
            )
            return {row[0] for row in rows}

    def cancel_requested(self, task_ids: Iterable[str]) -> set[str]:
        ids = list(task_ids)
        if not ids:
            return set()
        t = schema.fleet_tasks
        with self.engine.connect() as conn:
            rows = conn.execute(select(t.c.id).where(t.c.id.in_(ids) & t.c.cancel_requested))
            return {row[0] for row in rows}

    def requeue_lost(self) -> list[tuple[str, str]]:
        """Tasks whose lease expired go back to ``queued`` (or to ``failed`` after the last
        attempt); returns (task id, queue) of those that need a new message."""
        t = schema.fleet_tasks
        requeued: list[tuple[str, str]] = []
        with self.engine.begin() as conn:
            rows = conn.execute(
                select(t).where((t.c.state == "running") & (t.c.lease_expires < func.now()))
                .with_for_update(skip_locked=True)
            ).mappings().all()
            for row in rows:
                errors = [*(row["errors"] or []), _lost(dict(row))]
                if row["attempts"] >= self.max_attempts:
                    conn.execute(update(t).where(t.c.id == row["id"]).values(
                        state="failed", error=errors[-1]["error"], errors=errors, lease_owner=None,
                        finished_at=utcnow()))
                    continue
                conn.execute(update(t).where(t.c.id == row["id"]).values(
                    state="queued", lease_owner=None, lease_expires=None, errors=errors, published_at=None))
                requeued.append((row["id"], row["queue"]))
        return requeued

    def finish_task(
        self, task_id: str, incarnation: str, *, state: str, run_ids: Sequence[int] = (),
        result: dict[str, Any] | None = None, measured_at: datetime | None = None, error: str | None = None,
        attempt: int | None = None,
    ) -> bool:
        """End this worker's attempt (number ``attempt``, if given) as ``done``, ``cancelled`` or
        ``failed``; False if the lease was lost to another attempt meanwhile (then nothing changes)."""
        if state not in FINISHED_STATES:
            raise ValueError(f"invalid final task state {state!r}")
        t = schema.fleet_tasks
        with self.engine.begin() as conn:
            values: dict[str, Any] = dict(state=state, lease_owner=None, run_ids=list(run_ids),
                                          measured_at=measured_at, finished_at=utcnow())
            if result is not None:
                values["result"] = result
            if error is not None:
                values["error"] = error
            done = conn.execute(update(t).where(_lease_of(task_id, incarnation, attempt)).values(**values))
            if done.rowcount == 1 and error is not None:
                _append_error(conn, task_id, error)
        return done.rowcount == 1

    def fail_attempt(self, task_id: str, incarnation: str, error: str, attempt: int | None = None) -> str | None:
        """Record this attempt's error: ``retry`` (queued again, needs a message), ``failed``
        (that was the last attempt) or None (the lease had been lost; nothing changed)."""
        t = schema.fleet_tasks
        with self.engine.begin() as conn:
            row = conn.execute(
                select(t.c.attempts).where(_lease_of(task_id, incarnation, attempt)).with_for_update()
            ).first()
            if row is None:
                return None
            _append_error(conn, task_id, error)
            if row[0] >= self.max_attempts:
                conn.execute(update(t).where(t.c.id == task_id).values(
                    state="failed", error=error, lease_owner=None, finished_at=utcnow()))
                return "failed"
            conn.execute(update(t).where(t.c.id == task_id).values(
                state="queued", error=error, lease_owner=None, lease_expires=None, published_at=None))
            return "retry"

    def cancel_job(self, job_id: str) -> dict[str, int]:
        """Cancel job ``job_id``: queued tasks at once, running ones at their next trial.
        Counts of tasks by what happened to them; KeyError for an unknown job."""
        t, j = schema.fleet_tasks, schema.fleet_jobs
        with self.engine.begin() as conn:
            found = conn.execute(
                update(j).where((j.c.id == job_id) & j.c.cancelled_at.is_(None)).values(cancelled_at=utcnow())
            ).rowcount
            if not found and conn.execute(select(j.c.id).where(j.c.id == job_id)).first() is None:
                raise KeyError(job_id)
            queued = conn.execute(
                update(t).where((t.c.job_id == job_id) & (t.c.state == "queued"))
                .values(state="cancelled", cancel_requested=True, finished_at=utcnow())
            ).rowcount
            running = conn.execute(
                update(t).where((t.c.job_id == job_id) & (t.c.state == "running")).values(cancel_requested=True)
            ).rowcount
        return {"queued": queued, "running": running}

    # -- runs of a task ----------------------------------------------------------

    def task_runs(self, task_id: str) -> list[dict[str, Any]]:
        """Every run a task's attempts stored, released keys included, oldest first."""
        r = schema.runs
        with self.engine.connect() as conn:
            rows = conn.execute(
                select(r.c.id, r.c.task_key, r.c.status, r.c.error)
                .where(r.c.task_key.like(f"{_escape_like(task_id)}#%", escape="\\")).order_by(r.c.id)
            ).mappings()
            return [dict(row) for row in rows]

    def release_runs(self, task_id: str, *, keep_complete: bool, reason: str) -> list[int]:
        """Free the keys of runs a lost or earlier attempt left behind so that this attempt
        can store its own: a ``running`` (or ``abandoned``) run becomes ``interrupted``
        with ``reason``; a complete one is kept (``keep_complete``) or also marked
        ``interrupted`` (a comparison is rerun whole). Returns the ids changed."""
        r = schema.runs
        released: list[int] = []
        with self.engine.begin() as conn:
            rows = conn.execute(
                select(r.c.id, r.c.task_key, r.c.status)
                .where(r.c.task_key.like(f"{_escape_like(task_id)}#%", escape="\\"))
                .with_for_update()
            ).mappings().all()
            for row in rows:
                if RELEASED_MARK in row["task_key"] or (keep_complete and row["status"] == "complete"):
                    continue
                values: dict[str, Any] = {"task_key": f"{row['task_key']}{RELEASED_MARK}{row['id']}"}
                if row["status"] in ("running", "abandoned", "complete"):
                    values.update(status="interrupted", error=reason)
                    if row["status"] != "complete":
                        values["finished_at"] = utcnow()
                conn.execute(update(r).where(r.c.id == row["id"]).values(**values))
                released.append(int(row["id"]))
        return released

    def stored_trials(self, task_id: str) -> dict[int, int]:
        """Trial index → run id of the task's complete runs that hold their key."""
        found: dict[int, int] = {}
        for run in self.task_runs(task_id):
            key = run["task_key"]
            if RELEASED_MARK not in key and run["status"] == "complete":
                found[int(key.rsplit("#", 1)[1])] = int(run["id"])
        return found

    # -- status ------------------------------------------------------------------

    def jobs(self, *, job_id: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        """Newest first: each job with task counts by state and by machine."""
        j, t = schema.fleet_jobs, schema.fleet_tasks
        query = select(j.c.id, j.c.name, j.c.queues, j.c.repeat, j.c["compare"], j.c.submitted_by,
                       j.c.submitted_at, j.c.cancelled_at)
        query = query.where(j.c.id == job_id) if job_id else query.order_by(j.c.submitted_at.desc()).limit(limit)
        with self.engine.connect() as conn:
            jobs = [dict(row) for row in conn.execute(query).mappings()]
            ids = [job["id"] for job in jobs]
            counts = conn.execute(
                select(t.c.job_id, t.c.state, t.c.machine, t.c.queue, func.count().label("n"))
                .where(t.c.job_id.in_(ids)).group_by(t.c.job_id, t.c.state, t.c.machine, t.c.queue)
            ).mappings().all()
        by_job = {job["id"]: job for job in jobs}
        for job in jobs:
            job["counts"] = dict.fromkeys(TASK_STATES, 0)
            job["machines"] = {}
            job["queues_state"] = {}
        for row in counts:
            job = by_job[row["job_id"]]
            job["counts"][row["state"]] += row["n"]
            per_queue = job["queues_state"].setdefault(row["queue"], dict.fromkeys(TASK_STATES, 0))
            per_queue[row["state"]] += row["n"]
            if row["machine"]:
                per_machine = job["machines"].setdefault(row["machine"], dict.fromkeys(TASK_STATES, 0))
                per_machine[row["state"]] += row["n"]
        for job in jobs:
            job["state"] = job_state(job["counts"], cancelled=job["cancelled_at"] is not None)
        return jobs

    def tasks(self, job_id: str, *, limit: int | None = None) -> list[dict[str, Any]]:
        """The job's tasks by class, repeat and label; ``lost`` is true for a ``running`` one whose
        lease ran out (its machine stopped renewing it; a live worker's next heartbeat queues it
        again). With ``limit``, at most that many, those that need a look first: running, failed,
        queued, cancelled, then done (the sort and the cut are the database's)."""
        t = schema.fleet_tasks
        lost = ((t.c.state == "running") & (t.c.lease_expires < func.now())).label("lost")
        query = select(t, lost).where(t.c.job_id == job_id)
        if limit is not None:
            first = case({state: rank for rank, state in enumerate(ATTENTION_ORDER)}, value=t.c.state, else_=9)
            query = query.order_by(first, t.c.queue, t.c.repeat_index, t.c.label).limit(limit)
        else:
            query = query.order_by(t.c.queue, t.c.repeat_index, t.c.label)
        with self.engine.connect() as conn:
            return [{**row, "lost": bool(row["lost"])} for row in conn.execute(query).mappings()]

    def task(self, task_id: str) -> dict[str, Any] | None:
        t = schema.fleet_tasks
        with self.engine.connect() as conn:
            row = conn.execute(select(t).where(t.c.id == task_id)).mappings().first()
        return dict(row) if row else None

    def job_text(self, job_id: str) -> str:
        j = schema.fleet_jobs
        with self.engine.connect() as conn:
            return str(conn.execute(select(j.c.job_text).where(j.c.id == job_id)).scalar_one())

    def delete_job(self, job_id: str) -> None:
        """Forget a job and its tasks (its runs stay: they are ordinary runs)."""
        with self.engine.begin() as conn:
            conn.execute(delete(schema.fleet_tasks).where(schema.fleet_tasks.c.job_id == job_id))
            conn.execute(delete(schema.fleet_jobs).where(schema.fleet_jobs.c.id == job_id))


def job_state(counts: dict[str, int], *, cancelled: bool) -> str:
    """A job's state from its tasks' states: the first that applies of running, queued
    (nothing started yet), cancelled, failed (some task failed), done."""
    if counts["running"]:
        return "running"
    if counts["queued"]:
        return "queued" if not any(counts[s] for s in FINISHED_STATES) else "running"
    if cancelled or counts["cancelled"]:
        return "cancelled"
    if counts["failed"]:
        return "failed"
    return "done"


def _lease_of(task_id: str, incarnation: str, attempt: int | None) -> Any:
    """The task's row while worker ``incarnation`` holds its lease (in attempt ``attempt``, if given)."""
    t = schema.fleet_tasks
    where = (t.c.id == task_id) & (t.c.lease_owner == incarnation)
    return where if attempt is None else where & (t.c.attempts == attempt)


def _lost(task: dict[str, Any]) -> dict[str, Any]:
    return {
        "attempt": task["attempts"], "machine": task["machine"],
        "error": f"attempt {task['attempts']} on {task['machine']} was lost: the machine stopped renewing its lease",
    }


def _mark_published(conn: Connection, sent: Iterable[tuple[str, datetime]]) -> None:
    t = schema.fleet_tasks
    rows = [{"task": task_id, "when": when} for task_id, when in sent]
    if rows:
        conn.execute(update(t).where(t.c.id == bindparam("task")).values(published_at=bindparam("when")), rows)


def _append_error(conn: Connection, task_id: str, error: str) -> None:
    t = schema.fleet_tasks
    row = conn.execute(select(t.c.errors, t.c.attempts, t.c.machine).where(t.c.id == task_id)).first()
    if row is None:
        return
    errors = [*(row[0] or []), {"attempt": row[1], "machine": row[2], "error": error}]
    conn.execute(update(t).where(t.c.id == task_id).values(errors=errors))


def _escape_like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")

