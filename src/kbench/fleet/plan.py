"""From a job file to fleet tasks: one per instance per machine class (and repeat), or one
per comparison; and back, on a worker, from a stored task to the instances it runs."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence

from kbench.exit_codes import KbenchError
from kbench.jobs import JobInstance, expand_job, varying_keys
from kbench.store.fleet import PlannedTask

COMMAND_BENCHMARK = "command"


class PlanError(KbenchError, ValueError):
    """The job cannot be submitted as asked (no instance to compare, a path target)."""


class NotAllowed(PermissionError):
    """This worker does not run what the task asks (``command`` without --allow-command)."""


def check_fleet_targets(instances: Sequence[JobInstance], carried: Collection[str] = ()) -> None:
    """A fleet instance runs on ``local``, ``deb:RELEASE``, ``tree:URL@REV`` (each worker builds
    it) or a kernel the job carries (``carried``: ``kbench.fleet.kernels``); any other path names
    a file on the submitting machine, which the worker does not have."""
    for instance in instances:
        spec = instance.target
        if spec != "local" and not spec.startswith(("deb:", "tree:")) and spec not in carried:
            raise PlanError(
                f"instance {instance.id}: target {spec!r} is a path on the submitting machine that the job does not "
                "carry; fleet jobs run on `local`, `deb:RELEASE`, `tree:URL@REV` or a kernel the job carries"
            )


def check_carried_targets(instances: Sequence[JobInstance]) -> None:
    """A job that carries files runs on ``local``: they are placed in the task's directory on
    the worker, which a guest booted there does not see."""
    for instance in instances:
        if instance.target != "local":
            raise PlanError(
                f"instance {instance.id}: the job carries files (files:, or a cmd's program beside it), which reach "
                f"the worker's task directory and not a guest: run it on `local`, not {instance.target!r}"
            )


def check_allowed(instances: Sequence[JobInstance], *, allow_command: bool, carried: Collection[str] = ()) -> None:
    """NotAllowed unless every instance runs one of kbench's own benchmarks or the worker
    was started with --allow-command (PlanError for a target the job does not carry)."""
    check_fleet_targets(instances, carried)
    if allow_command:
        return
    for instance in instances:
        if instance.benchmark == COMMAND_BENCHMARK:
            raise NotAllowed(
                f"instance {instance.id} runs the `command` benchmark (any program); this worker was not "
                "started with --allow-command"
            )


def compare_groups(instances: Sequence[JobInstance], axis: str) -> list[list[JobInstance]]:
    """Instances that differ only in ``axis`` (a key of ``JobInstance.describe()``, e.g.
    ``target`` or a parameter such as ``cmd``), in job order; each group is one comparison
    whose first instance is the base."""
    groups: dict[tuple[tuple[str, str], ...], list[JobInstance]] = {}
    for instance in instances:
        shown = instance.describe()
        if axis not in shown:
            raise PlanError(f"instance {instance.id} has no {axis!r} to compare on")
        rest = tuple(sorted((key, value) for key, value in shown.items() if key != axis))
        groups.setdefault(rest, []).append(instance)
    found = list(groups.values())
    single = [group[0].id for group in found if len(group) < 2]
    if single:
        raise PlanError(
            f"--compare {axis}: {len(single)} instance(s) have nothing to compare with "
            f"({', '.join(single[:3])}{'…' if len(single) > 3 else ''}); the job must list two or more values of {axis}"
        )
    return found


def side_label(instance: JobInstance, axis: str) -> str:
    label = instance.describe()[axis]
    return label.removeprefix("deb:") if axis == "target" else label


def plan_tasks(
    instances: Sequence[JobInstance], *, queues: Sequence[str], repeat: int, compare_axis: str | None,
) -> list[PlannedTask]:
    """Every task of a submission: per machine class, per repeat, per instance (or group)."""
    units: list[tuple[str, tuple[str, ...], str]] = []
    if compare_axis:
        for group in compare_groups(instances, compare_axis):
            labels = " vs ".join(side_label(instance, compare_axis) for instance in group)
            units.append(("compare", tuple(instance.id for instance in group), f"{group[0].benchmark}: {labels}"))
    else:
        axes = [key for key in varying_keys(list(instances)) if key != "benchmark"]
        for instance in instances:
            shown = instance.describe()
            label = " ".join([instance.benchmark, *(f"{key}={shown[key]}" for key in axes if key in shown)])
            units.append(("instance", (instance.id,), label))
    return [
        PlannedTask(id=uuid.uuid4().hex, queue=queue, kind=kind, instance_ids=ids, label=label, repeat_index=index)
        for queue in queues
        for index in range(repeat)
        for kind, ids, label in units
    ]


def stored_instances(job_text: str, name: str, ids: Sequence[str], *, cpu_count: int) -> list[JobInstance]:
    """The instances ``ids`` of a stored job, expanded (and so validated) on this machine.

    JobError if the text is not a valid job here; PlanError if an id is not among its instances.
    """
    by_id = {instance.id: instance for instance in expand_job(job_text, cpu_count=cpu_count, name=name)}
    missing = [instance_id for instance_id in ids if instance_id not in by_id]
    if missing:
        raise PlanError(f"the job has no instance {', '.join(missing)} when expanded on this machine")
    return [by_id[instance_id] for instance_id in ids]
