"""``kbench fleet``: submit jobs to test machines, watch them, cancel them, list the machines.

Celery, Redis and PostgreSQL are imported by the commands themselves, never at start-up.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource
from rich.table import Table
from rich.text import Text

from kbench import exit_codes
from kbench.cli.console import echo_literal
from kbench.cli.main import emit_json, err_console, fail, out_console, user_errors
from kbench.cli.needs import GroupNeedingExtra
from kbench.contract.json_document import utc_timestamp

if TYPE_CHECKING:
    from kbench.fleet.settings import FleetSettings


def fleet_settings(*, db: str | None = None, broker: str | None = None, need_broker: bool = True) -> FleetSettings:
    """The fleet's settings; ``kbench --db URL`` given on the command line counts as ``db``."""
    from kbench.fleet.settings import load_settings

    root = click.get_current_context().find_root()
    if db is None and root.get_parameter_source("db") == ParameterSource.COMMANDLINE:
        db = root.params.get("db")
    return load_settings(db=db, broker=broker, need_broker=need_broker)


broker_option = click.option(
    "--broker", metavar="URL",
    help="Redis broker URL without a password (default: $KBENCH_BROKER or the fleet config; see docs/fleet.md).",
)


@click.group("fleet", cls=GroupNeedingExtra, extra="fleet")
def fleet_group() -> None:
    """Run jobs on many test machines: Celery + Redis queues per machine class, runs in one
    PostgreSQL store (see docs/fleet.md). Machines join with `kbench worker`."""


@fleet_group.command("submit")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--queue", "queues", multiple=True, metavar="CLASS",
              help="A machine class to run every instance on (repeat for several; at least one).")
@click.option("--repeat", type=click.IntRange(1, 1000), default=1, show_default=True,
              help="Submit every task N times (N tasks per instance and class).")
@click.option("--compare", "compare_axis", metavar="KEY",
              help="Compare the instances that differ only in KEY (e.g. target, or a parameter such as cmd) "
              "as one task: interleaved trials on one machine, with a verdict.")
@click.option("--trials", type=click.IntRange(min=3), default=10, show_default=True,
              help="With --compare: most trials per side.")
@broker_option
@click.option("--json", "as_json", is_flag=True, help="Print the job id and its tasks as JSON.")
def submit_cmd(
    file: Path, queues: tuple[str, ...], repeat: int, compare_axis: str | None, trials: int, broker: str | None,
    as_json: bool,
) -> None:
    """Validate FILE here, then queue one task per instance per machine class."""
    from kbench.fleet.submit import CompareOptions, submit_job

    with user_errors():
        if not queues:
            raise click.UsageError("name at least one machine class with --queue CLASS")
        settings = fleet_settings(broker=broker)
        compare = CompareOptions(axis=compare_axis, trials=trials) if compare_axis else None
        submission = submit_job(settings, file, queues=queues, repeat=repeat, compare=compare,
                                cpu_count=os.cpu_count() or 1)
    for warning in submission.warnings:
        err_console.print(Text.assemble(("warning:", "yellow"), f" {warning}"), highlight=False)
    if as_json:
        emit_json({"job": submission.job_id, "tasks": [
            {"id": t.id, "queue": t.queue, "kind": t.kind, "instances": list(t.instance_ids), "label": t.label,
             "repeat": t.repeat_index} for t in submission.tasks],
            "files": [f.to_dict() for f in submission.files],
            "kernels": {k.spec: k.to_dict() for k in submission.kernels}})
        return
    per_class = {q: sum(1 for t in submission.tasks if t.queue == q) for q in dict.fromkeys(queues)}
    shown = ", ".join(f"{n} on {q}" for q, n in per_class.items())
    carried = ""
    if submission.files:
        from kbench.cli.cache_cmds import format_bytes

        names = ", ".join(f.path for f in submission.files[:3]) + (", …" if len(submission.files) > 3 else "")
        carried = (f"; it carries {len(submission.files)} file{'s' if len(submission.files) > 1 else ''} "
                   f"({names}: {format_bytes(sum(f.size for f in submission.files))})")
    for kernel in submission.kernels:
        from kbench.cli.cache_cmds import format_bytes

        carried += (f"; it carries kernel {kernel.spec} ({kernel.release}: "
                    f"{format_bytes(sum(p.size for p in kernel.parts.values()))})")
    click.echo(f"job {submission.job_id}: {len(submission.tasks)} tasks queued ({shown}){carried}; "
               f"`kbench fleet status {submission.job_id}` follows them")


@fleet_group.command("status")
@click.argument("job_id", required=False)
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Jobs listed (newest first).")
@click.option("--tasks", "task_limit", type=click.IntRange(min=0), default=100, show_default=True,
              help="With JOB_ID: tasks listed at most, those that need a look first (running, failed, queued, "
              "cancelled, done); 0 lists every task.")
@click.option("--json", "as_json", is_flag=True, help="Jobs (or JOB_ID's tasks) as JSON.")
def status_cmd(job_id: str | None, limit: int, task_limit: int, as_json: bool) -> None:
    """Queued, running, done, failed and cancelled tasks per job, class and machine; with
    JOB_ID, that job's tasks (up to --tasks) with their machine, attempts, runs and error."""
    with user_errors():
        fleet = _fleet_store(fleet_settings(need_broker=False))
        jobs = fleet.jobs(job_id=job_id, limit=limit)
        if job_id and not jobs:
            fail(f"no fleet job {job_id}", exit_codes.NOT_FOUND)
        total = sum(jobs[0]["counts"].values()) if job_id else 0
        cut = 0 < task_limit < total
        tasks = fleet.tasks(job_id, limit=task_limit if cut else None) if job_id else []
        live = fleet.live_queues()
    if as_json:
        emit_json({"job": _jsonable(jobs[0]), "tasks": [_task_json(t) for t in tasks],
                   "tasks_left_out": total - len(tasks)} if job_id
                  else {"jobs": [_jsonable(job) for job in jobs]})
        return
    console = out_console()
    if not jobs:
        click.echo("no fleet jobs yet: `kbench fleet submit JOB.yaml --queue CLASS` queues one")
        return
    table = Table(box=None, pad_edge=False)
    counted = ("queued", "running", "done", "failed", "cancelled")
    for name in ("job", "file", "state", *counted, "classes", "submitted"):
        table.add_column(name, justify="right" if name in counted else "left")
    for job in jobs:
        counts = job["counts"]
        classes = ", ".join(q if q in live else f"{q} (no machine)" for q in job["queues"])
        table.add_row(job["id"], job["name"], job["state"], *(str(counts[s]) for s in
                      ("queued", "running", "done", "failed", "cancelled")), classes,
                      job["submitted_at"].strftime("%Y-%m-%d %H:%M:%S"))
    console.print(table)
    if job_id:
        _print_tasks(jobs[0], tasks)
        if cut:
            click.echo(f"\n{len(tasks)} of {total} tasks listed, those that need a look first; "
                       f"`kbench fleet status {job_id} --tasks 0` lists every task")


def _print_tasks(job: dict[str, Any], tasks: list[dict[str, Any]]) -> None:
    console = out_console()
    if job["machines"]:
        console.print()
        for machine, counts in sorted(job["machines"].items()):
            states = ", ".join(f"{n} {state}" for state, n in counts.items() if n)
            console.print(f"{machine}: {states}", highlight=False)
    console.print()
    table = Table(box=None, pad_edge=False)
    repeated = job["repeat"] > 1
    for name in ("task", "class", *(["repeat"] if repeated else []), "what", "state", "attempts", "machine", "runs",
                 "error"):
        table.add_column(name)
    for task in tasks:
        table.add_row(task["id"][:12], task["queue"], *([str(task["repeat_index"] + 1)] if repeated else []),
                      task["label"], "running, lost" if task.get("lost") else task["state"], str(task["attempts"]),
                      task["machine"] or "-", ",".join(str(r) for r in task["run_ids"]) or "-",
                      (task["error"] or "")[:120])
    console.print(table)


@fleet_group.command("cancel")
@click.argument("job_id")
def cancel_cmd(job_id: str) -> None:
    """Cancel JOB_ID: queued tasks are dropped, running ones stop at once (samples kept, run interrupted)."""
    with user_errors():
        fleet = _fleet_store(fleet_settings(need_broker=False))
        try:
            counts = fleet.cancel_job(job_id)
        except KeyError:
            fail(f"no fleet job {job_id}", exit_codes.NOT_FOUND)
    click.echo(f"job {job_id}: {counts['queued']} queued task(s) cancelled, "
               f"{counts['running']} running task(s) told to stop")


@fleet_group.command("resend")
@click.argument("job_id")
@broker_option
def resend_cmd(job_id: str, broker: str | None) -> None:
    """Send JOB_ID's queued tasks to the broker again (after a broker lost its data): a task
    that is already running or done is not run twice."""
    from kbench.fleet.app import make_app, send_tasks

    with user_errors():
        settings = fleet_settings(broker=broker)
        fleet = _fleet_store(settings)
        if not fleet.jobs(job_id=job_id):
            fail(f"no fleet job {job_id}", exit_codes.NOT_FOUND)
        sent = send_tasks(make_app(settings), fleet.queued(job_id))
        fleet.mark_published(sent)
    click.echo(f"job {job_id}: {len(sent)} queued task(s) sent again")


@fleet_group.command("machines")
@click.option("--json", "as_json", is_flag=True, help="Every machine with its inventory as JSON.")
def machines_cmd(as_json: bool) -> None:
    """The test machines: name, model, cores, memory, class (queue), state, current job, last seen."""
    with user_errors():
        machines = _fleet_store(fleet_settings(need_broker=False)).machines()
    if as_json:
        emit_json({"machines": [_jsonable({k: v for k, v in m.items() if k != "sysinfo"}) for m in machines]})
        return
    if not machines:
        click.echo("no machines yet: start `kbench worker --queue CLASS` on each test machine")
        return
    table = Table(box=None, pad_edge=False)
    for name in ("name", "model", "cores", "memory", "queue", "state", "current job", "last seen"):
        table.add_column(name, justify="right" if name in ("cores", "memory") else "left")
    for m in machines:
        memory = f"{m['memory_bytes'] / 2**30:.0f}G" if m["memory_bytes"] else "-"
        current = f"{m['job']} {m['task_label']}" if m["job"] else "-"
        table.add_row(m["name"], m["cpu_model"] or "-", str(m["cpu_count"] or "-"), memory, m["queue"], m["state"],
                      current, _ago(m["age"]))
    out_console().print(table)


@fleet_group.command("demo")
@click.option("--dir", "workdir", type=click.Path(file_okay=False, path_type=Path),
              help="Keep the servers' files, the config and the worker logs here (default: a temp dir, removed).")
@click.option("--submit", "job_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Submit this job to both demo classes, wait for it, show the status and stop.")
@click.option("--isolated", is_flag=True,
              help="Each worker in network and mount namespaces of its own (root): it reaches Redis and "
                   "PostgreSQL on a private bridge only and cannot see the submitter's files.")
@click.option("--workers", "worker_count", type=click.IntRange(1, 64), default=2, show_default=True,
              help="How many workers, their classes alternating demo-a, demo-b.")
def demo_cmd(workdir: Path | None, job_file: Path | None, isolated: bool, worker_count: int) -> None:
    """A fleet on this machine: Redis and PostgreSQL in a temp dir on 127.0.0.1 (free ports) and
    two workers (classes demo-a and demo-b). Ctrl-C stops it all.

    With --isolated (as root) every worker runs in its own network and mount namespaces, joined
    to the servers by a private bridge, with the submitter's directories (the demo's, the job
    file's, the current and home directories, the temp dir) hidden and its own home, cache and
    temp dir; such workers run command benchmarks (--allow-command). Without root the demo says
    so and runs plain."""
    from kbench import children
    from kbench.fleet.demo import LocalFleet, demo_classes
    from kbench.fleet.isolation import why_not_isolated

    if isolated and (reason := why_not_isolated()):
        err_console.print(f"kbench fleet demo: --isolated needs namespaces ({reason}); running the plain demo")
        isolated = False

    # The scratch dir is the guardian's to remove if the demo is killed (kill -9 included).
    with user_errors(), children.scratch_dir("kbench-fleet-demo-") as scratch:
        base = (workdir or scratch).resolve()
        # Also when started in the background, where SIGINT may come in ignored.
        previous = {number: signal.signal(number, _interrupt) for number in (signal.SIGINT, signal.SIGTERM)}
        try:
            hide = [job_file.resolve().parent] if job_file else []
            with LocalFleet(base, classes=demo_classes(worker_count), isolated=isolated, hide=hide) as fleet:
                _demo_session(fleet, job_file)
        except KeyboardInterrupt:
            err_console.print("kbench fleet demo: stopped")
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _demo_session(fleet: Any, job_file: Path | None) -> None:
    from kbench.fleet.settings import load_settings
    from kbench.fleet.submit import submit_job

    echo_literal(f"Redis {fleet.broker_url}, PostgreSQL {fleet.db_url}")
    if fleet.network is not None:
        echo_literal(f"isolated: each worker in its own network and mount namespaces, on bridge {fleet.network.bridge} "
                     f"({fleet.network.cidr})")
    echo_literal(f"workers: {', '.join(f'{w.name} (class {w.machine_class}, log {w.log})' for w in fleet.workers)}")
    echo_literal(f"\nIn another shell:\n  export KBENCH_FLEET_CONFIG={fleet.config}")
    echo_literal(f"  kbench fleet submit JOB.yaml {' '.join(f'--queue {c}' for c in fleet.classes)}")
    click.echo("  kbench fleet status; kbench fleet machines")
    echo_literal(f"  KBENCH_DB={fleet.db_url} kbench results\n")
    if job_file is None:
        click.echo("Ctrl-C stops the demo.")
        while True:
            time.sleep(3600)
    os.environ["KBENCH_FLEET_CONFIG"] = str(fleet.config)
    settings = load_settings(db=fleet.db_url, broker=fleet.broker_url)  # the demo's own, whatever $KBENCH_DB says
    submission = submit_job(settings, job_file, queues=fleet.classes, repeat=1, compare=None,
                            cpu_count=os.cpu_count() or 1)
    click.echo(f"job {submission.job_id}: {len(submission.tasks)} tasks queued")
    store = _fleet_store(settings)
    while True:
        job = store.jobs(job_id=submission.job_id)[0]
        if job["state"] in ("done", "failed", "cancelled"):
            break
        time.sleep(0.5)
    emit_json({"job": job["id"], "state": job["state"], "counts": job["counts"], "machines": job["machines"]})


def _fleet_store(settings: FleetSettings) -> Any:
    from kbench.fleet.database import open_fleet_store
    from kbench.store.fleet import FleetStore

    return FleetStore(open_fleet_store(settings.db_url), lease_s=settings.timing.lease_s,
                      max_attempts=settings.timing.max_attempts)


def _ago(age: timedelta | None) -> str:
    if age is None:
        return "-"
    seconds = max(0, int(age.total_seconds()))
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 7200:
        return f"{seconds // 60} min ago"
    return f"{seconds // 3600} h ago"


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, timedelta):
            out[key] = value.total_seconds()
        elif isinstance(value, datetime):
            out[key] = utc_timestamp(value)
        elif hasattr(value, "isoformat"):
            out[key] = value.isoformat()
        else:
            out[key] = value
    return out


def _task_json(task: dict[str, Any]) -> dict[str, Any]:
    return _jsonable({k: v for k, v in task.items() if k not in ("lease_owner",)})
