"""``kbench compare --fleet CLASS``: the comparison as one fleet task, waited for here.

The spec is sent whole (``kbench.fleet.compare_task``); a worker of CLASS measures every side on
its machine and stores the runs in the fleet's database; the report it built from that outcome
is rendered here, and its verdicts exit as a local compare's (``--fail-on``).
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from kbench.engine.compare_spec import ComparisonSpec
from kbench.exit_codes import KbenchError

if TYPE_CHECKING:
    from kbench.store.fleet import FleetStore

POLL_S = 0.5


def failed(message: str, exit_code: int) -> KbenchError:
    """The worker's comparison ended with an error: it ends this command with the local compare's exit code."""
    kind = type("FleetCompareFailed", (KbenchError,), {"exit_code": exit_code})
    error: KbenchError = kind(message)
    return error


def compare_on_fleet(spec: ComparisonSpec, queue: str, say: Any) -> dict[str, Any]:
    """Send ``spec`` to a worker of ``queue``, wait for it, and return the task's result
    (``kbench.fleet.compare_task.run_compare_task``); the local compare's error when it failed."""
    from kbench.cli.bisect_fleet import fleet_store
    from kbench.exit_codes import MEASUREMENT_FAILED
    from kbench.fleet.compare_task import COMPARE_SPEC_KIND, job_text, spec_to_json
    from kbench.fleet.submit import submit_planned
    from kbench.jobs import expand_job
    from kbench.store.fleet import FINISHED_STATES, FleetStore, PlannedTask

    store, settings = fleet_store(queue)
    fleet = FleetStore(store.engine, lease_s=settings.timing.lease_s, max_attempts=settings.timing.max_attempts)
    text = job_text(spec)
    (instance, *_) = expand_job(text, cpu_count=1, name="compare")
    sides = spec.commands or spec.kernels or tuple(value for _, value in spec.params)
    task = PlannedTask(id=uuid.uuid4().hex, queue=queue, kind=COMPARE_SPEC_KIND, instance_ids=(instance.id,),
                       label=f"compare {' vs '.join(sides)}"[:200], repeat_index=0, spec=spec_to_json(spec))
    job = submit_planned(settings, name="compare", job_text=text, tasks=[task], fleet=fleet)
    say(f"fleet job {job}: the comparison is one task; waiting for a worker of {queue}")
    for warning in _warnings(fleet, queue, commands=bool(spec.commands)):
        say(f"warning: {warning}")
    shown = "queued"
    while True:
        row = fleet.task(task.id)
        if row is not None and row["state"] != shown and row["state"] == "running":
            say(f"measuring on {row['machine']} (attempt {row['attempts']})")
        shown = row["state"] if row is not None else shown
        if row is not None and row["state"] in FINISHED_STATES:
            break
        time.sleep(POLL_S)
    result = dict(row["result"] or {})
    if row["state"] != "done":
        raise failed(f"fleet task {task.id} {row['state']} on {row['machine']}: {row['error']}",
                                 MEASUREMENT_FAILED)
    if result.get("error"):
        raise failed(f"{result['error']} (on {result.get('machine')})", int(result["exit_code"]))
    say(f"measured on {result.get('machine')}; runs {', '.join(str(i) for i in row['run_ids'] or [])} "
        "in the fleet's database")
    return result


def _warnings(fleet: FleetStore, queue: str, *, commands: bool) -> list[str]:
    """Why the task may wait or fail: no running machine of the class, or none that runs commands."""
    running = [m for m in fleet.machines() if m["queue"] == queue and m["state"] != "offline"]
    if queue not in fleet.live_queues() or not running:
        return [f"no machine of class {queue} is running now: the comparison waits in the queue (Ctrl-C stops "
                "waiting, not the task: kbench fleet cancel JOB)"]
    if commands and not any(m["allow_command"] for m in running):
        return [f"no running machine of class {queue} allows `command` (kbench worker --allow-command): the "
                "comparison fails there"]
    return []
