"""What a suite run produced: raw per-iteration values, the tool's output, its identity."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from kbench.suites.model import ParamValue, SuiteTest


@dataclass(frozen=True)
class Iteration:
    """One fresh process of the tool: its metrics, its full output, its exit status."""

    index: int
    values: dict[str, float]
    stdout: str
    stderr: str
    exit_code: int
    wall_seconds: float


@dataclass(frozen=True)
class SuiteResult:
    """Every iteration of one ``<suite>.<test>`` run, in the order they ran.

    ``command`` is the argv every iteration ran (``command[0]`` is the tool's name;
    ``tool_path`` is where it was found). ``interrupted`` is True when Ctrl-C stopped
    the run; the iterations finished before it are kept.
    """

    test: SuiteTest
    params: dict[str, ParamValue]
    command: tuple[str, ...]
    tool_path: str
    tool_version: str
    package: str
    started_at: str  # ISO 8601, UTC
    iterations: tuple[Iteration, ...]
    interrupted: bool = False
    where: str = "local"  # "local" or "guest": where the tool ran

    @property
    def name(self) -> str:
        return self.test.full_name

    @property
    def primary_metric(self) -> str:
        return self.test.metric_name(self.test.primary.stat)

    @property
    def command_line(self) -> str:
        return shlex.join(self.command)

    def values(self, metric: str) -> list[float]:
        """The raw value of ``metric`` from each iteration, in order."""
        names = self.test.metric_names()
        if metric not in names:
            raise KeyError(f"{self.name} has no metric {metric!r}; its metrics: {', '.join(names)}")
        return [it.values[metric] for it in self.iterations]

    def raw(self) -> dict[str, list[float]]:
        """``{metric: [value per iteration]}`` for every metric of the test."""
        return {name: self.values(name) for name in self.test.metric_names()}

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record: identity, parameters, metric definitions, iterations."""
        return {
            "benchmark": self.name,
            "params": dict(self.params),
            "command": list(self.command),
            "tool_path": self.tool_path,
            "tool_version": self.tool_version,
            "package": self.package,
            "started_at": self.started_at,
            "interrupted": self.interrupted,
            "where": self.where,
            "primary_metric": self.primary_metric,
            "metrics": [
                {"name": self.test.metric_name(m.stat), "unit": m.unit, "direction": m.direction}
                for m in self.test.metrics
            ],
            "iterations": [
                {
                    "index": it.index,
                    "values": dict(it.values),
                    "exit_code": it.exit_code,
                    "wall_seconds": it.wall_seconds,
                    "stdout": it.stdout,
                    "stderr": it.stderr,
                }
                for it in self.iterations
            ],
        }
