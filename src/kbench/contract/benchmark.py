"""What can be measured: a benchmark's name, kind, parameters, unit and direction."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from kbench.contract.suggest import did_you_mean
from kbench.contract.text import shown
from kbench.exit_codes import KbenchError


class UnknownBenchmark(KbenchError, LookupError):
    """No benchmark has that name; the message suggests the closest ones."""


class BadParameter(KbenchError, ValueError):
    """A benchmark parameter is unknown or its value has the wrong type."""


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: str  # "int", "str", "bool", "float"
    default: str
    description: str


@dataclass(frozen=True)
class TaskCount:
    """How a benchmark takes a number of tasks (LKP's ``nr_task``/``nr_threads``).

    ``param`` is the parameter that sets it. It counts units of ``per_unit`` tasks, times
    the value of ``unit_param`` when one is named: a hackbench group is 2 × ``fds`` tasks,
    so ``TaskCount("groups", 2, "fds")``; a stress-ng worker is one task: ``TaskCount("workers")``.
    """

    param: str
    per_unit: int = 1
    unit_param: str | None = None

    def value(self, tasks: int, params: Mapping[str, str], defaults: Mapping[str, str]) -> int:
        """The parameter's value for ``tasks`` tasks: whole units, rounded up, at least one."""
        size = self.per_unit
        if self.unit_param is not None:
            size *= int(params.get(self.unit_param, defaults.get(self.unit_param, "1")), 0)
        return max(1, math.ceil(tasks / max(1, size)))


@dataclass(frozen=True)
class Benchmark:
    """A measurable thing. ``metric`` follows ``<suite>.<test>.<stat>``."""

    name: str
    kind: str  # the kind that runs it: "probe", "kfunc", "scale" or "suite"
    workload: str  # what the kind calls it: the probe workload, the kbench.ko bench, the suite test
    description: str
    unit: str
    metric: str
    direction: str
    params: tuple[ParamSpec, ...]
    columns: tuple[str, ...] = ("ticks",)
    task_count: TaskCount | None = None
    """The parameter a task count sets (None: ``nr_task`` if the benchmark takes one)."""
    duration_param: str | None = None
    """The parameter holding the seconds one run of a whole tool lasts, if it has one."""
    tools: tuple[str, ...] = ()
    """The host executables a whole tool's run needs (a guest target carries them in)."""
    unavailable: str = ""
    """Why it cannot run on this system (a tool no Debian 12 package has, a test its tool was built
    without); empty when it can. Listed with the reason; a run or a job of it is refused with it."""

    def tasks(self) -> TaskCount | None:
        """How this benchmark takes a number of tasks, or None if it runs no group of tasks."""
        if self.task_count is not None:
            return self.task_count
        return TaskCount("nr_task") if any(p.name == "nr_task" for p in self.params) else None

    def param(self, name: str) -> ParamSpec:
        for spec in self.params:
            if spec.name == name:
                return spec
        known = [p.name for p in self.params]
        hint = did_you_mean(name, known)
        listing = ", ".join(known) if known else "none"
        raise BadParameter(f"{self.name} has no parameter {name!r}{hint}; its parameters: {listing}")

    def validate_params(self, values: dict[str, str]) -> dict[str, str]:
        """Check names and value types; returns the values unchanged when valid. A benchmark that
        cannot run on this system (``unavailable``) is refused here, with the reason."""
        if self.unavailable:
            raise BadParameter(f"{self.name} cannot run on this system: {self.unavailable}")
        for name, value in values.items():
            spec = self.param(name)
            _check_type(self.name, spec, value)
        return values


def _check_type(bench: str, spec: ParamSpec, value: str) -> None:
    if spec.type == "int":
        try:
            int(value, 0)
        except ValueError:
            raise BadParameter(f"{bench}: {spec.name} must be an integer, got {shown(value)}") from None
    elif spec.type == "float":
        try:
            float(value)
        except ValueError:
            raise BadParameter(f"{bench}: {spec.name} must be a number, got {shown(value)}") from None
    elif spec.type == "bool" and value not in ("0", "1", "true", "false", "yes", "no"):
        raise BadParameter(f"{bench}: {spec.name} must be 0 or 1, got {shown(value)}")


