"""``kbench bisect start --fleet CLASS``: a bisection whose builds and rounds are fleet tasks.

The bisection is decided here, as on one machine; each build check and each round (the
commit, good and bad, interleaved) is one task for a machine of CLASS, measured there as the
watch's bisections are (``kbench.watch.fleet.FleetLab``: ``watch-build`` and ``watch-round``
tasks, ``kbench.fleet.watch_tasks``). Its store is the fleet's database, where the workers
store the runs. Workers need ``--allow-command`` (they run the commits' builds and command)
and must reach the repository (``--fleet-repo URL``; the local path by default).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kbench.bisect import session
from kbench.bisect.session import SessionPlan
from kbench.fleet.settings import FleetSettings
from kbench.store.db import Store

Log = Callable[[str], None]


def fleet_store(queue: str) -> tuple[Store, FleetSettings]:
    """The fleet's database, after checking the class name and that the broker answers."""
    from kbench.cli.fleet_cmd import fleet_settings
    from kbench.fleet.app import check_broker, make_app
    from kbench.fleet.database import open_fleet_store
    from kbench.fleet.settings import check_queue

    check_queue(queue)
    settings = fleet_settings()
    check_broker(make_app(settings))
    return Store(open_fleet_store(settings.db_url)), settings


def job_text(command: str, samples: int) -> str:
    """The job the tasks name (validated again by each worker): the command, timed ``samples`` times."""
    return f"benchmark: command\nparams:\n  cmd: {json.dumps(command)}\nsamples: {samples}\n"


def start_on_fleet(store: Store, settings: FleetSettings, queue: str, *, repo: Path, repo_url: str, good: str,
                   bad: str, plan: SessionPlan, workdir: Path | None, log: Log) -> tuple[session.Bisection, Any]:
    """A new bisection of ``plan`` (a command's) and the measurer whose tasks go to ``queue``."""
    from dataclasses import replace

    from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
    from kbench.jobs import expand_job
    from kbench.watch.fleet import FleetMeasurer

    command, build = plan.command, plan.build
    if command is None or build is None:
        raise ValueError("a fleet bisection times a command and builds each commit")
    samples = int(plan.params([])["samples"])
    text = job_text(command, samples)
    (instance,) = expand_job(text, cpu_count=1, name="bisect")
    plan = replace(plan, tags=(*plan.tags, f"instance:{instance.id}", f"fleet-queue:{queue}"))
    bisection = session.start(store, repo, good, bad, plan, workdir=workdir)
    measurer = FleetMeasurer(
        store, settings, queue, repo=repo, repo_url=repo_url, build=build, job_text=text,
        job_name=f"bisect-{bisection.id}.yaml", instances=[instance], budget_s=0.0, alpha=plan.alpha,
        workdir=Path(str(bisection.params["workdir"])), log=log,
        build_timeout_s=plan.build_timeout_s or DEFAULT_BUILD_TIMEOUT_S,
    )
    return bisection, measurer


def run_on_fleet(store: Store, measurer: Any, bisection_id: int, log: Log) -> dict[str, Any]:
    """Run the bisection through fleet tasks; its final row (BisectError when it failed)."""
    row: dict[str, Any] = measurer.run_bisection(bisection_id, log)
    return row
