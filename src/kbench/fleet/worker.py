"""``kbench worker``: this machine joins the fleet and runs its class's tasks, one at a time.

The process is a Celery worker (prefork pool of one process, prefetch 1, late
acknowledgement) plus a heartbeat thread that, every ``heartbeat_s``:

- records that the machine is alive and what it runs (``kbench fleet machines``);
- renews the lease of the task it runs (a task whose lease runs out is presumed lost);
- stops a task that ``kbench fleet cancel`` cancelled (signals the pool process);
- queues again the tasks of machines whose lease ran out, and sends the messages that
  a submitter or a failed attempt could not send — but only after it has itself reached
  the database without a break for a whole lease, so a database outage cannot make it
  judge live machines dead.

The pool process dies with the worker (Celery sets its parent-death signal).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
import uuid
from datetime import datetime
from typing import Any

from kbench.children import multiprocessing_scratch_dir
from kbench.fleet.app import TASK_NAME, make_app, send_tasks
from kbench.fleet.database import open_fleet_store
from kbench.fleet.execute import CANCEL_SIGNAL, WorkerIdentity, execute_task, set_identity
from kbench.fleet.run_store import is_connection_error
from kbench.fleet.settings import FleetSettings, FleetTiming, celery_queue, check_queue
from kbench.store.fleet import FleetStore

log = logging.getLogger("kbench.fleet")


class Heartbeat(threading.Thread):
    """The worker's voice in the store while its pool process measures (see the module doc)."""

    def __init__(self, fleet: FleetStore, identity: WorkerIdentity, timing: FleetTiming, app: Any):
        super().__init__(name="kbench-heartbeat", daemon=True)
        self.fleet = fleet
        self.identity = identity
        self.timing = timing
        self.app = app
        self.stopping = threading.Event()
        self.signalled: set[str] = set()
        self.connected_since: float | None = None

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=10)

    def run(self) -> None:
        failing = False
        while not self.stopping.wait(self.timing.heartbeat_s):
            try:
                self.beat()
            except Exception as exc:
                self.connected_since = None
                if not failing and is_connection_error(exc):
                    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
                    log.warning("heartbeat: database unreachable (%s); trying every %g s", reason,
                                self.timing.heartbeat_s)
                elif not failing:
                    log.exception("heartbeat failed")
                failing = True
                continue
            if failing:
                log.warning("heartbeat: database reachable again")
                failing = False

    def beat(self) -> None:
        me = self.identity
        running = _running_tasks()
        if not self.fleet.heartbeat(me.name, me.incarnation, current_task=next(iter(running), None)):
            log.error("another worker now answers to the name %r: stopping this one", me.name)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self.fleet.renew_leases(me.incarnation, running)
        for task_id in self.fleet.cancel_requested(running) - self.signalled:
            log.info("task %s: cancelled, stopping it", task_id)
            self.signalled.add(task_id)
            os.kill(running[task_id], CANCEL_SIGNAL)
        now = time.monotonic()
        if self.connected_since is None:
            self.connected_since = now
        if now - self.connected_since >= self.timing.lease_s:
            self.resend(self.fleet.requeue_lost(), "its machine's lease ran out")
            sent = self.fleet.send_unpublished(self.fleet.lease, lambda tasks: send_tasks(self.app, tasks))
            if sent:  # one worker at a time sends a task (row locks), and not while its submitter still sends
                log.warning("sent %d task(s) again: they were never sent", len(sent))

    def resend(self, tasks: list[tuple[str, str]], why: str) -> None:
        if not tasks:
            return
        log.warning("queuing %d task(s) again: %s", len(tasks), why)
        self.fleet.mark_published(send_tasks(self.app, tasks))


def _running_tasks() -> dict[str, int]:
    """Task id → pid of the pool process running it (Celery's own record, main process)."""
    from celery.worker import state

    return {request.id: request.worker_pid for request in list(state.active_requests) if request.worker_pid}


def _machine_id(store: Any, info: dict[str, Any]) -> int:
    """The ``machines`` row of this inventory; two workers of one host may race to create it."""
    from sqlalchemy.exc import IntegrityError

    try:
        return int(store.machine_id(info))
    except IntegrityError:
        return int(store.machine_id(info))


def run_worker(
    settings: FleetSettings, *, queue: str, name: str, allow_command: bool, loglevel: str = "INFO",
    sysinfo: dict[str, Any] | None = None,
) -> int:
    """Register this machine as ``name`` in class ``queue`` and serve it until stopped; the exit code.

    Raises StoreError (database), MachineNameTaken (a live worker has the name) or
    SettingsError (a bad class name) before anything is consumed.
    """
    import warnings

    from celery import signals
    from celery.exceptions import CPendingDeprecationWarning

    from kbench.store.db import Store
    from kbench.sysinfo.collect import collect_sysinfo

    check_queue(queue)
    # Celery warns that tasks will be cancelled on broker loss in 6.0; kbench keeps measuring (see make_app).
    warnings.filterwarnings("ignore", category=CPendingDeprecationWarning)
    engine = open_fleet_store(settings.db_url)
    info = sysinfo or collect_sysinfo()
    machine_id = _machine_id(Store(engine), info)
    timing = settings.timing
    fleet = FleetStore(engine, lease_s=timing.lease_s, max_attempts=timing.max_attempts)
    identity = WorkerIdentity(name=name, queue=queue, incarnation=uuid.uuid4().hex, allow_command=allow_command,
                              settings=settings)
    fleet.register_machine(name=name, queue=queue, incarnation=identity.incarnation, sysinfo=info,
                           machine_id=machine_id, allow_command=allow_command, pid=os.getpid())
    set_identity(identity)
    app = make_app(settings)

    def republish(task_id: str, machine_class: str) -> list[tuple[str, datetime]]:
        return send_tasks(app, [(task_id, machine_class)])

    @app.task(name=TASK_NAME, bind=True)  # type: ignore[untyped-decorator]
    def run_fleet_task(_self: Any, task_id: str) -> str:
        return execute_task(str(task_id), republish)

    def in_pool_process(**_: Any) -> None:
        engine.dispose(close=False)  # the main process's connections are not the pool process's to use

    def ready(**_: Any) -> None:
        log.info("machine %s (class %s) serves queue %s%s", name, queue, celery_queue(queue),
                 ", command benchmark allowed" if allow_command else "")

    signals.worker_process_init.connect(in_pool_process, weak=False)
    signals.worker_ready.connect(ready, weak=False)
    heartbeat = Heartbeat(fleet, identity, timing, app)
    heartbeat.start()
    multiprocessing_scratch_dir()  # the prefork pool's shared memory: not left in $TMPDIR by kill -9
    try:
        worker = app.Worker(
            hostname=f"kbench@{name}", queues=[celery_queue(queue)], concurrency=1, pool="prefork",
            prefetch_multiplier=1, loglevel=loglevel, without_gossip=True, without_mingle=True,
            without_heartbeat=True, optimization="fair", quiet=True,
        )
        worker.start()
        return int(worker.exitcode or 0)
    finally:
        heartbeat.stop()
        try:
            fleet.machine_stopped(name, identity.incarnation)
        except Exception as exc:  # the database may be the reason we stop
            log.warning("could not record that %s stopped: %s", name, exc)
        engine.dispose()
