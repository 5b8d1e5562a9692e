"""``kbench fleet submit``: validate a job here, store it with its tasks, send one message per task."""

from __future__ import annotations

import getpass
import socket
import uuid
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.fleet.app import SendFailed, check_broker, make_app, send_tasks
from kbench.fleet.database import open_fleet_store
from kbench.fleet.inputs import MAX_JOB_BYTES, JobInput, gather, store_inputs
from kbench.fleet.kernels import CarriedKernel, gather_kernels, packing, store_kernels
from kbench.fleet.plan import COMMAND_BENCHMARK, PlanError, check_carried_targets, check_fleet_targets, plan_tasks
from kbench.fleet.settings import FleetSettings, check_queue
from kbench.jobs import JobInstance, expand_job, job_files
from kbench.store.fleet import FleetStore, PlannedTask

MAX_TASKS = 100_000
"""More tasks than this in one submission is refused (split the job)."""


@dataclass(frozen=True)
class CompareOptions:
    """A submission whose instances that differ only in ``axis`` are compared on one machine."""

    axis: str
    trials: int = 10
    min_trials: int = 5
    adaptive: bool = True
    alpha: float = DEFAULT_ALPHA
    seed: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"axis": self.axis, "trials": self.trials, "min_trials": self.min_trials, "adaptive": self.adaptive,
                "alpha": self.alpha, "seed": self.seed}


@dataclass
class Submission:
    job_id: str
    tasks: list[PlannedTask]
    sent: int
    warnings: list[str] = field(default_factory=list)
    files: list[JobInput] = field(default_factory=list)
    """What the job carries to its workers (``kbench.fleet.inputs``), stored by digest."""
    kernels: list[CarriedKernel] = field(default_factory=list)
    """The kernels it carries (``kbench.fleet.kernels``), stored by digest too."""


def submit_job(
    settings: FleetSettings, path: Path, *, queues: Sequence[str], repeat: int, compare: CompareOptions | None,
    cpu_count: int,
) -> Submission:
    """Submit the job file at ``path``: nothing is stored or sent unless the job is valid
    (JobError, PlanError: a file it names is missing too) and the broker answers
    (BrokerUnreachable). The files it carries are stored first (``kbench.fleet.inputs``)."""
    if not queues:
        raise PlanError("name at least one machine class with --queue CLASS")
    classes = list(dict.fromkeys(check_queue(queue) for queue in queues))
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanError(f"cannot read job file {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    instances = expand_job(text, cpu_count=cpu_count, name=str(path))
    with packing() as packed:
        kernels = gather_kernels(path, instances, packed)
        check_fleet_targets(instances, {kernel.spec for kernel in kernels})
        carried = gather(path, job_files(text, name=str(path)), instances)
        if carried:
            check_carried_targets(instances)
        total = sum(item.size for item in carried) + sum(p.size for k in kernels for p in k.parts.values())
        if total > MAX_JOB_BYTES:
            raise PlanError(f"the job's files and kernels pass {MAX_JOB_BYTES >> 20} MiB in all: a job carries at "
                            "most that")
        return _submit(settings, path, text, instances, classes, repeat, compare, carried, kernels)


def _submit(
    settings: FleetSettings, path: Path, text: str, instances: list[JobInstance], classes: list[str], repeat: int,
    compare: CompareOptions | None, carried: list[JobInput], kernels: list[CarriedKernel],
) -> Submission:
    tasks = plan_tasks(instances, queues=classes, repeat=repeat, compare_axis=compare.axis if compare else None)
    if len(tasks) > MAX_TASKS:
        raise PlanError(f"{len(tasks)} tasks in one submission (at most {MAX_TASKS}): split the job or lower --repeat")
    app = make_app(settings)
    check_broker(app)
    engine = open_fleet_store(settings.db_url)
    try:
        fleet = FleetStore(engine, lease_s=settings.timing.lease_s, max_attempts=settings.timing.max_attempts)
        job_id = uuid.uuid4().hex[:12]
        inputs = store_inputs(engine, carried, path.parent)  # each stored once, before the job that names it
        if kernels:
            inputs = {**(inputs or {}), "kernels": store_kernels(engine, kernels)}
        fleet.create_job(
            job_id=job_id, name=path.name, job_text=text, queues=classes, repeat=repeat,
            compare=compare.to_dict() if compare else None, submitted_by=f"{getpass.getuser()}@{socket.gethostname()}",
            tasks=tasks, inputs=inputs,
        )
        try:
            sent = send_marked(app, fleet, [(task.id, task.queue) for task in tasks])
        except SendFailed as exc:
            raise SendFailed(exc.sent, RuntimeError(
                f"job {job_id} is stored but only {len(exc.sent)} of {len(tasks)} tasks reached the broker ({exc}); "
                "workers send the rest once they reach it, or cancel it with `kbench fleet cancel`"
            )) from exc
        warnings = _warnings(fleet, classes, any(i.benchmark == COMMAND_BENCHMARK for i in instances))
    finally:
        engine.dispose()
    return Submission(job_id=job_id, tasks=tasks, sent=len(sent), warnings=warnings, files=carried, kernels=kernels)


def _warnings(fleet: FleetStore, classes: list[str], runs_commands: bool) -> list[str]:
    found: list[str] = []
    live = fleet.live_queues()
    for machine_class in classes:
        if machine_class not in live:
            found.append(f"no machine of class {machine_class} is running now: its tasks wait in the queue")
    if runs_commands:
        allowing = {m["queue"] for m in fleet.machines() if m["allow_command"] and m["state"] != "offline"}
        for machine_class in classes:
            if machine_class not in allowing:
                found.append(f"the job runs `command`, and no running machine of class {machine_class} allows it "
                             "(kbench worker --allow-command): such tasks fail there")
    return found


def submit_planned(
    settings: FleetSettings, *, name: str, job_text: str, tasks: Sequence[PlannedTask], fleet: FleetStore,
) -> str:
    """Store a job of ready-made ``tasks`` (``kbench watch``'s: each carries its ``spec``) and send
    one message per task; its id. The job text is validated again by every worker."""
    job_id = uuid.uuid4().hex[:12]
    fleet.create_job(job_id=job_id, name=name, job_text=job_text, queues=sorted({t.queue for t in tasks}), repeat=1,
                     compare=None, submitted_by=f"{getpass.getuser()}@{socket.gethostname()}", tasks=list(tasks))
    app = make_app(settings)
    with suppress(SendFailed):  # what was not sent, a worker's heartbeat sends later
        send_marked(app, fleet, [(task.id, task.queue) for task in tasks])
    return job_id


SEND_BATCH = 200
"""Messages sent between two marks of the tasks sent (``fleet_tasks.published_at``)."""


def send_marked(app: Any, fleet: FleetStore, tasks: list[tuple[str, str]]) -> list[tuple[str, datetime]]:
    """Send one message per (task id, class), marking the tasks sent batch by batch: a job of
    10,000 tasks takes longer to send than a lease, and the workers send again only the tasks of a
    job that had none marked sent for a lease (``FleetStore.send_unpublished``). SendFailed holds
    every task sent (and marked) before the failure."""
    done: list[tuple[str, datetime]] = []
    for start in range(0, len(tasks), SEND_BATCH):
        try:
            sent = send_tasks(app, tasks[start:start + SEND_BATCH])
        except SendFailed as exc:
            fleet.mark_published(exc.sent)
            exc.sent = [*done, *exc.sent]
            raise
        fleet.mark_published(sent)
        done += sent
    return done
