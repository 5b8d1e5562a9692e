"""What a worker does with a delivered task: claim it, run it as ``kbench run`` would, record it.

Exactly once per stored run, on top of Celery's at-least-once delivery:

- the claim (a row lock on the task) lets one attempt at a time own a task; a duplicate
  delivery of a task that a live machine runs, or that has ended, is acknowledged and dropped;
- each trial's run carries the key ``<task>#<trial>`` (unique), so a redelivered task
  skips the trials already stored and stores each missing one once;
- runs that a lost attempt left ``running`` are marked ``interrupted`` (samples kept) and
  release their key, so the trial is measured again;
- a failed attempt is queued again until ``max_attempts``, then the task is ``failed``
  with every attempt's error kept.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import count
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

from sqlalchemy import Engine

from kbench.catalog.benchmarks import lookup
from kbench.contract.benchmark import BadParameter, UnknownBenchmark
from kbench.contract.request import BadRequest
from kbench.fleet.compare_task import COMPARE_SPEC_KIND
from kbench.fleet.database import fleet_engine
from kbench.fleet.inputs import InputRefused
from kbench.fleet.kernels import carried_specs, with_kernels
from kbench.fleet.plan import NotAllowed, PlanError, check_allowed, side_label, stored_instances
from kbench.fleet.run_store import DbRetry, FleetRunStore, TrialTaken
from kbench.fleet.settings import FleetSettings
from kbench.fleet.watch_tasks import WATCH_KINDS, RepositoryUnavailable, cache_root
from kbench.jobs import JobError, JobInstance
from kbench.store.fleet import Claim, FleetStore
from kbench.targets.base import ExecutionFailed

log = logging.getLogger("kbench.fleet")
CANCEL_SIGNAL = signal.SIGUSR2
"""Sent by the worker's main process to the pool process running a task that was cancelled."""


Republish = Callable[[str, str], list[tuple[str, datetime]]]
"""Sends a new message for (task id, machine class); returns what was sent, with when."""


class TaskCancelled(Exception):
    """``kbench fleet cancel`` asked this task to stop."""


@dataclass
class WorkerIdentity:
    """Who this worker is; set in the main process before the pool forks."""

    name: str
    queue: str
    incarnation: str
    allow_command: bool
    settings: FleetSettings


@dataclass
class _ProcessResources:
    pid: int
    engine: Engine
    fleet: FleetStore
    retry: DbRetry


@dataclass
class _CancelFlag:
    requested: bool = False
    previous: Any = field(default=None)


_identity: WorkerIdentity | None = None
_resources: _ProcessResources | None = None


def set_identity(identity: WorkerIdentity) -> None:
    global _identity
    _identity = identity


def _here() -> tuple[WorkerIdentity, _ProcessResources]:
    global _resources
    if _identity is None:
        raise RuntimeError("this process is not a kbench worker")
    if _resources is None or _resources.pid != os.getpid():
        timing = _identity.settings.timing
        engine = fleet_engine(_identity.settings.db_url)
        _resources = _ProcessResources(
            pid=os.getpid(), engine=engine,
            fleet=FleetStore(engine, lease_s=timing.lease_s, max_attempts=timing.max_attempts),
            retry=DbRetry(timing.db_retry_s),
        )
    return _identity, _resources


def execute_task(task_id: str, republish: Republish) -> str:
    """Run fleet task ``task_id`` on this worker; returns what happened, for the log.

    ``republish(task_id, queue)`` sends a new message for a task queued again after a
    failed attempt (if it cannot, the heartbeat of some worker sends it later).
    """
    me, here = _here()
    claim = here.retry(lambda: here.fleet.claim(task_id, machine=me.name, incarnation=me.incarnation),
                       f"claiming task {task_id}")
    if claim.outcome != "run":
        log.info("task %s: %s %s", task_id, claim.outcome, claim.detail)
        return claim.outcome
    log.info("task %s: attempt %d of %s (%s)", task_id, claim.task["attempts"], claim.task["label"], claim.job["id"])
    cancel = _CancelFlag()

    def on_cancel(_signum: int, _frame: FrameType | None) -> None:
        cancel.requested = True
        raise KeyboardInterrupt  # as Ctrl-C: the probe stops at a sample boundary and keeps its samples

    cancel.previous = signal.signal(CANCEL_SIGNAL, on_cancel)
    try:
        return _run_and_record(me, here, claim, cancel, republish)
    finally:
        signal.signal(CANCEL_SIGNAL, cancel.previous)


def _run_and_record(
    me: WorkerIdentity, here: _ProcessResources, claim: Claim, cancel: _CancelFlag, republish: Republish,
) -> str:
    task_id, attempt = claim.task["id"], int(claim.task["attempts"])
    try:
        run_store, result = _run_claimed(me, here, claim, cancel)
    except (TaskCancelled, KeyboardInterrupt):
        if not cancel.requested:
            raise
        here.retry(lambda: here.fleet.finish_task(task_id, me.incarnation, state="cancelled", attempt=attempt,
                                                  run_ids=list(here.fleet.stored_trials(task_id).values())),
                   f"recording task {task_id} as cancelled")
        log.info("task %s: cancelled", task_id)
        return "cancelled"
    except (JobError, PlanError, NotAllowed, UnknownBenchmark, BadParameter, BadRequest,
            RepositoryUnavailable, ExecutionFailed, InputRefused) as exc:
        # The same job fails the same way on every attempt: no retry. A program that failed is the
        # program's outcome, not the worker's fault: running it again until it passes would time a
        # flaky program as if it had never failed.
        error = _one_line(exc)
        here.retry(lambda: here.fleet.finish_task(task_id, me.incarnation, state="failed", error=error,
                                                  attempt=attempt),
                   f"recording task {task_id} as failed")
        log.warning("task %s: refused: %s", task_id, error)
        return "failed"
    except TrialTaken as exc:
        log.warning("task %s: %s; leaving it to that attempt", task_id, exc)
        return "held"
    except Exception as exc:
        error = f"{type(exc).__name__}: {_one_line(exc)}"
        verdict = here.retry(lambda: here.fleet.fail_attempt(task_id, me.incarnation, error, attempt),
                             f"recording the error of task {task_id}")
        log.warning("task %s: attempt %d failed on %s: %s (%s)", task_id, claim.task["attempts"], me.name, error,
                    verdict or "lease lost")
        if verdict == "retry":
            _republish(republish, here, task_id, claim.task["queue"])
        return verdict or "held"
    stored = here.retry(lambda: here.fleet.stored_trials(task_id), f"reading the runs of task {task_id}")
    run_ids = list(stored.values())
    recorded = here.retry(
        lambda: here.fleet.finish_task(task_id, me.incarnation, state="done", run_ids=run_ids, result=result,
                                       measured_at=run_store.measured_at, attempt=attempt),
        f"recording task {task_id} as done",
    )
    if not recorded:
        log.warning("task %s: attempt %d refused (fencing): it finished after the task's lease went to another "
                    "attempt; that attempt records it", task_id, attempt)
        return "held"
    log.info("task %s: done, runs %s", task_id, run_ids)
    return "done"


def _republish(republish: Republish, here: _ProcessResources, task_id: str, queue: str) -> None:
    try:
        sent = republish(task_id, queue)
    except Exception as exc:  # the broker is away: a heartbeat sends it later (published_at is still empty)
        log.warning("task %s: could not queue it again now (%s); a worker's heartbeat will", task_id, exc)
        return
    here.retry(lambda: here.fleet.mark_published(sent), f"recording task {task_id} as sent")


def _run_claimed(
    me: WorkerIdentity, here: _ProcessResources, claim: Claim, cancel: _CancelFlag,
) -> tuple[FleetRunStore, dict[str, Any] | None]:
    task, job = claim.task, claim.job
    instances = stored_instances(job["job_text"], job["name"], task["instance_ids"], cpu_count=os.cpu_count() or 1)
    check_allowed(instances, allow_command=me.allow_command, carried=carried_specs(job.get("inputs")))
    tags = (f"fleet:{job['id']}", f"queue:{task['queue']}", f"worker:{me.name}")
    if task["kind"] in WATCH_KINDS:
        return _run_watch_task(me, here, claim, instances, tags, cancel)
    if task["kind"] == COMPARE_SPEC_KIND:  # kbench compare --fleet
        return _run_spec_comparison(me, here, claim, tags, cancel)
    given = instances  # as the job names them: a comparison's labels
    instances = with_kernels(here.engine, job.get("inputs"), instances, cache_root())  # kbench.fleet.kernels
    with _inputs_placed(here, claim) as cwd:
        if task["kind"] == "compare":
            return _run_comparison(me, here, claim, instances, tags, cancel, cwd, given)
        return _run_instance(me, here, claim, instances[0], tags, cancel, cwd), None


@contextmanager
def _inputs_placed(here: _ProcessResources, claim: Claim) -> Iterator[Path | None]:
    """The task's directory holding the files its job carries (``kbench.fleet.inputs``; fetched into
    this machine's cache as needed, digests checked), removed when the task ends; None when the job
    carries nothing (its programs run in the worker's directory, as before)."""
    from kbench.fleet.inputs import placed
    from kbench.fleet.watch_tasks import cache_root, task_workdir

    manifest = claim.job.get("inputs")
    if not (manifest or {}).get("files"):  # nothing, or kernels only (kbench.fleet.kernels)
        yield None
        return
    workdir = task_workdir(claim.task["id"])
    shutil.rmtree(workdir, ignore_errors=True)
    try:
        placed(here.engine, manifest, cache_root() / "inputs", workdir)
        yield workdir
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _run_instance(
    me: WorkerIdentity, here: _ProcessResources, claim: Claim, instance: JobInstance, tags: tuple[str, ...],
    cancel: _CancelFlag, cwd: Path | None,
) -> FleetRunStore:
    """The instance's trials not stored yet, through ``run_job`` exactly as ``kbench run``."""
    from kbench.engine.job_runner import run_job
    from kbench.engine.target_factory import needs_perf, target_factory
    from kbench.kinds.registry import kind_of

    task_id = claim.task["id"]
    whole_tool = kind_of(lookup(instance.benchmark)).whole_tool
    trials = 1 if whole_tool else instance.iterations
    reason = (f"the attempt measuring it was lost; attempt {claim.task['attempts']} on {me.name} "
              "measures this trial again")
    here.retry(lambda: here.fleet.release_runs(task_id, keep_complete=True, reason=reason),
               f"releasing the runs of lost attempts of task {task_id}")
    stored = here.retry(lambda: here.fleet.stored_trials(task_id), f"reading the runs of task {task_id}")
    todo = [trial for trial in range(trials) if trial not in stored]
    run_store = FleetRunStore(here.engine, fleet=here.fleet, task_id=task_id, incarnation=me.incarnation,
                              trials=todo, retry=here.retry, attempt=claim.task["attempts"])
    if not todo:
        return run_store
    to_run = replace(instance, tags=(*instance.tags, *tags))
    if not whole_tool:
        to_run = replace(to_run, iterations=len(todo))

    def before_trial(_instance: JobInstance, _trial: int) -> None:
        if cancel.requested:
            raise TaskCancelled

    benchmark = lookup(instance.benchmark)
    perf = needs_perf([benchmark], counters=instance.counters, profile=instance.profile)
    run_job(run_store, [to_run], target_factory([benchmark], perf=perf, cwd=cwd), before_trial)
    if cancel.requested:  # the last trial was the one stopped
        raise TaskCancelled
    return run_store


def _run_comparison(
    me: WorkerIdentity, here: _ProcessResources, claim: Claim, instances: list[JobInstance], tags: tuple[str, ...],
    cancel: _CancelFlag, cwd: Path | None, given: list[JobInstance],
) -> tuple[FleetRunStore, dict[str, Any]]:
    """The whole comparison on this machine (its interleaving needs one machine); a lost
    attempt's partial comparison is marked interrupted and the comparison runs again."""
    from kbench.engine.compare_protocol import ComparisonSide, run_comparison
    from kbench.engine.target_factory import target_factory
    from kbench.report.comparison import render
    from kbench.report.comparison.build import build_report

    spec = claim.job["compare"]
    axis = spec["axis"]
    run_store = _whole_task_store(me, here, claim, FleetRunStore, "a comparison",
                                  "runs the comparison again whole")
    sides = [
        ComparisonSide(
            label=side_label(shown, axis), kernel=None if instance.target == "local" else instance.target,
            benchmark=lookup(instance.benchmark), request=instance.to_run_request(),
        )
        for instance, shown in zip(instances, given, strict=True)
    ]

    def before_trial(_label: str, _index: int, _planned: int) -> None:
        if cancel.requested:
            raise TaskCancelled

    outcome = run_comparison(
        run_store, sides, target_factory((side.benchmark for side in sides), cwd=cwd), max_trials=spec["trials"],
        min_trials=min(spec["min_trials"], spec["trials"]),
        adaptive=spec["adaptive"], alpha=spec["alpha"], seed=spec["seed"], on_trial=before_trial, tags=tags,
    )
    if cancel.requested:
        raise TaskCancelled
    report = build_report(
        outcome, title=f"{sides[0].benchmark.name}: {' vs '.join(side.label for side in sides)}",
        label_kind="kernel" if axis == "target" else "program", alpha=spec["alpha"], margin=None,
        correction="holm", context={"machine": me.name, "class": claim.task["queue"], "host": socket.gethostname()},
        parameters={"compare": axis, "trials": spec["trials"], "seed": spec["seed"], "fleet job": claim.job["id"]},
    )
    return run_store, json.loads(render(report, "json"))


def _run_watch_task(
    me: WorkerIdentity, here: _ProcessResources, claim: Claim, instances: list[JobInstance], tags: tuple[str, ...],
    cancel: _CancelFlag,
) -> tuple[FleetRunStore, dict[str, Any]]:
    """A ``kbench watch`` task (``kbench.fleet.watch_tasks``), whole: a lost attempt's runs are
    marked interrupted and the task is measured again."""
    from kbench.fleet.watch_tasks import run_watch_task, task_workdir

    run_store = _whole_task_store(me, here, claim, FleetRunStore, "a watch task", "measures it again whole")
    result = run_watch_task(run_store, claim.task, instances, tags, task_workdir(claim.task["id"]))
    if cancel.requested:
        raise TaskCancelled
    return run_store, {**result, "machine": me.name}


def _run_spec_comparison(
    me: WorkerIdentity, here: _ProcessResources, claim: Claim, tags: tuple[str, ...], cancel: _CancelFlag,
) -> tuple[FleetRunStore, dict[str, Any]]:
    """A ``kbench compare --fleet`` task, whole, on this machine: a lost attempt's runs are marked
    interrupted and the comparison runs again."""
    from kbench.fleet.compare_task import TaggedRunStore, run_compare_task

    run_store = _whole_task_store(me, here, claim, TaggedRunStore, "a comparison",
                                  "runs the comparison again whole")
    run_store.extra_tags = tags
    result = run_compare_task(run_store, dict(claim.task["spec"] or {}), me.name)
    if cancel.requested:
        raise TaskCancelled
    return run_store, result


_Store = TypeVar("_Store", bound=FleetRunStore)


def _whole_task_store(
    me: WorkerIdentity, here: _ProcessResources, claim: Claim, store: type[_Store], what: str, again: str,
) -> _Store:
    """The run store of a task measured whole on one machine, once the runs of its lost attempts
    are marked interrupted (``what`` and ``again`` say so in their reason)."""
    task_id = claim.task["id"]
    reason = f"part of {what} whose attempt was lost; attempt {claim.task['attempts']} on {me.name} {again}"
    here.retry(lambda: here.fleet.release_runs(task_id, keep_complete=False, reason=reason),
               f"releasing the runs of lost attempts of task {task_id}")
    return store(here.engine, fleet=here.fleet, task_id=task_id, incarnation=me.incarnation,
                 trials=_trial_numbers(), retry=here.retry, attempt=claim.task["attempts"])


def _trial_numbers() -> Iterator[int]:
    return count()


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, JobError):
        return "invalid job: " + "; ".join(str(problem) for problem in exc.problems)
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
