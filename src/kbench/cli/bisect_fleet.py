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


def start_on_fleet(store: Store, queue: str, *, repo: Path, repo_url: str, good: str, bad: str,
                   plan: SessionPlan, workdir: Path | None) -> session.Bisection:
    """A new bisection of ``plan`` (a command's) whose tasks go to ``queue``: the class, the URL
    and the instance its tasks name are kept in its ``params["fleet"]`` (``bisect resume --fleet``)."""
    from dataclasses import replace

    from kbench.jobs import expand_job

    command = plan.command
    if command is None or plan.build is None:
        raise ValueError("a fleet bisection times a command and builds each commit")
    samples = int(plan.params([])["samples"])
    (instance,) = expand_job(job_text(command, samples), cpu_count=1, name="bisect")
    bisection = session.start(store, repo, good, bad, replace(plan, tags=(*plan.tags, f"instance:{instance.id}")),
                              workdir=workdir)
    params = {**bisection.params, "fleet": {"queue": queue, "repo": repo_url}}
    store.update_bisection(bisection.id, params=params)
    return session.load(store, bisection.id)


def run_on_fleet(store: Store, settings: FleetSettings, bisection: session.Bisection, log: Log) -> dict[str, Any]:
    """Run (or go on with) a bisection started with ``--fleet``, its builds and rounds as fleet
    tasks; its final row (BisectError when it failed)."""
    from kbench.bisect.labkit import DEFAULT_BUILD_TIMEOUT_S
    from kbench.jobs import expand_job
    from kbench.watch.fleet import FleetMeasurer

    fleet = dict(bisection.params["fleet"])
    text = job_text(bisection.command, int(bisection.params["samples"]))
    instances = expand_job(text, cpu_count=1, name="bisect")
    measurer = FleetMeasurer(
        store, settings, str(fleet["queue"]), repo=bisection.repo, repo_url=str(fleet["repo"]), build=bisection.build,
        job_text=text, job_name=f"bisect-{bisection.id}.yaml", instances=instances, budget_s=0.0,
        alpha=float(bisection.params["alpha"]), workdir=bisection.workdir, log=log,
        build_timeout_s=float(bisection.params.get("build_timeout_s") or DEFAULT_BUILD_TIMEOUT_S),
    )
    row: dict[str, Any] = measurer.run_bisection(bisection.id, log)
    return row
