"""The Celery application of the fleet: one task, JSON messages that carry a task id only.

A message says *which* stored task to run, never *what* to run: the job text stays in the
results database and every worker validates it again with kbench's own job schema.
Delivery is at least once (late acknowledgement, redelivery when a worker is lost);
``kbench.fleet.execute`` turns that into exactly once per stored run.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from celery import Celery

from kbench import exit_codes
from kbench.exit_codes import KbenchError
from kbench.fleet.settings import FleetSettings, celery_queue

TASK_NAME = "kbench.fleet.run"


class BrokerUnreachable(KbenchError, RuntimeError):
    """The Redis broker did not answer."""

    exit_code = exit_codes.BROKER_FAILED

    def message(self) -> str:
        return f"the fleet's broker is unreachable: {self}"


def make_app(settings: FleetSettings) -> Celery:
    """A Celery app on the settings' broker, configured for one job at a time per worker."""
    app = Celery("kbench-fleet", broker=settings.broker_url, set_as_current=False)
    timing = settings.timing
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        result_backend=None,
        task_acks_late=True,  # acknowledged when finished, so a lost worker's task is delivered again
        task_reject_on_worker_lost=True,  # ... also when the pool process running it dies
        task_acks_on_failure_or_timeout=True,  # failures are recorded in the store, not redelivered
        worker_prefetch_multiplier=1,  # reserve nothing beyond the task in hand
        worker_concurrency=1,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        # Remote control stays on (Celery's default) although kbench steers nothing through it:
        # without its pub/sub connection a worker whose acknowledgement failed while Redis restarted
        # was seen never to notice the broker was back (tests/fleet: broker restart).
        broker_connection_retry_on_startup=True,
        broker_connection_max_retries=None,  # a worker waits for its broker forever
        broker_transport_options={
            "visibility_timeout": timing.visibility_timeout_s,
            "unacked_restore_interval": max(1, round(timing.heartbeat_s)),
            "unacked_restore_throttle": 1,
            "socket_timeout": 30,
            "socket_connect_timeout": 10,
        },
        task_create_missing_queues=True,
        task_default_queue=celery_queue("default"),
    )
    return app


def check_broker(app: Celery, *, attempts: int = 3) -> None:
    """Connect to the broker once (a few tries); BrokerUnreachable if it does not answer."""
    try:
        with app.connection_for_write() as connection:
            connection.ensure_connection(max_retries=attempts, interval_start=0.2, interval_step=0.5,
                                         interval_max=1.0, timeout=5)
    except Exception as exc:  # kombu raises OperationalError or socket errors depending on the failure
        raise BrokerUnreachable(str(exc) or type(exc).__name__) from exc


def send_tasks(app: Celery, tasks: list[tuple[str, str]], **options: Any) -> list[tuple[str, datetime]]:
    """Send one message per (task id, machine class) through one connection; (id, when sent) of each.

    Stops at the first failure (SendFailed, with what was sent) after sending what it could.
    """
    sent: list[tuple[str, datetime]] = []
    try:
        with app.producer_or_acquire() as producer:
            for task_id, machine_class in tasks:
                when = datetime.now(UTC)
                app.send_task(TASK_NAME, args=[task_id], task_id=task_id, queue=celery_queue(machine_class),
                              producer=producer, retry=True,
                              retry_policy={"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5,
                                            "interval_max": 1.0},
                              **options)
                sent.append((task_id, when))
    except Exception as exc:  # kombu's publish errors vary with what failed
        raise SendFailed(sent, exc) from exc
    return sent


class SendFailed(BrokerUnreachable):
    """Sending stopped part way: ``sent`` holds the ids that did go out."""

    def __init__(self, sent: list[tuple[str, datetime]], cause: Exception):
        super().__init__(str(cause) or type(cause).__name__)
        self.sent = sent
