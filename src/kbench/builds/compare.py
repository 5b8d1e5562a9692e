"""Two builds measured side by side: the interleaved design of ``kbench compare --command``.

The job's command runs in each build's worktree (``cd WORKTREE && CMD`` through the
shell), the two sides alternating in randomized mirrored blocks of short slots, judged on
CPU time (user + system of the child) by the Wilcoxon signed-rank test of the block
log-ratios, with looks and alpha spending (``kbench.engine.interleaved``). The comparison
is measured now, on this machine: whatever the machine did over the nights the
history saw, both builds meet it alike here.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kbench.builds.worktree import Build
from kbench.catalog.benchmarks import lookup
from kbench.compare.slot import CPU
from kbench.compare.thresholds import DEFAULT_ALPHA
from kbench.contract.request import RunRequest
from kbench.engine.compare_protocol import ComparisonSide
from kbench.engine.interleaved import DEFAULT_BUDGET_S, run_interleaved
from kbench.engine.profiling import ProfiledSide, profile_sides
from kbench.jobs import JobInstance
from kbench.store.db import Store
from kbench.targets.local import LocalTarget

COMMAND = "command"


class NotComparable(ValueError):
    """The instance is not one whose builds can be compared side by side here."""


@dataclass(frozen=True)
class SideSummary:
    """One side's slot statistics of the judged metric: median, standard deviation, count."""

    commit: str
    median: float
    stdev_pct: float
    slots: int

    @classmethod
    def of(cls, commit: str, values: Sequence[float]) -> SideSummary:
        data = np.asarray(values, dtype=np.float64)
        if data.size == 0:
            return cls(commit, float("nan"), float("nan"), 0)
        median = float(np.median(data))
        stdev = float(data.std(ddof=1)) if data.size > 1 else 0.0
        return cls(commit, median, 100.0 * stdev / float(data.mean()) if data.mean() else 0.0, int(data.size))

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "median": self.median, "stdev_pct": self.stdev_pct, "slots": self.slots}


@dataclass(frozen=True)
class BuildComparison:
    """The verdict of ``new`` against ``base`` (``Verdict.to_dict()``), with what measured it."""

    base: SideSummary
    new: SideSummary
    verdict: dict[str, Any]
    blocks: int
    elapsed_s: float
    design: str
    run_ids: list[int]

    @property
    def word(self) -> str:
        """regression, improvement, no change or inconclusive."""
        return str(self.verdict["verdict"])

    @property
    def change_pct(self) -> float:
        return float(self.verdict["change_pct"])

    @property
    def ci_pct(self) -> tuple[float, float]:
        low, high = self.verdict["ci_pct"]
        return float(low), float(high)

    @property
    def p_value(self) -> float:
        return float(self.verdict["p_value"])

    def to_json(self) -> dict[str, Any]:
        return {"base": self.base.to_json(), "new": self.new.to_json(), "verdict": self.verdict,
                "blocks": self.blocks, "elapsed_s": self.elapsed_s, "design": self.design, "run_ids": self.run_ids}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> BuildComparison:
        return cls(base=SideSummary(**data["base"]), new=SideSummary(**data["new"]), verdict=dict(data["verdict"]),
                   blocks=int(data["blocks"]), elapsed_s=float(data["elapsed_s"]), design=str(data["design"]),
                   run_ids=[int(i) for i in data["run_ids"]])


def side_request(instance: JobInstance, build: Build) -> RunRequest:
    """The instance's command, run in ``build``'s worktree."""
    if instance.benchmark != COMMAND:
        raise NotComparable(f"instance {instance.id} runs {instance.benchmark}: only a `command` depends on a "
                            "commit's build here (a kernel's benchmarks need --kernel-from-build)")
    params = instance.run_params()
    cmd = params.get("cmd", "true")
    # counted (perf's software events, negligible for a program's executions): the why of a change
    return RunRequest(benchmark=COMMAND, params={**params, "cmd": f"cd {shlex.quote(str(build.path))} && {cmd}",
                                                 "shell": "1"}, counters=True)


def compare_builds(
    store: Store, base: Build, new: Build, instance: JobInstance, *, budget_s: float = DEFAULT_BUDGET_S,
    alpha: float = DEFAULT_ALPHA, seed: int = 0, tags: Sequence[str] = (), metric: str = CPU,
) -> BuildComparison:
    """``new`` against ``base`` (module docstring); its runs are stored with ``tags``, each with the perf
    counters of its slots and, when the instance asks for a profile (``profile: true``), a profile of
    each side in a run of its own afterwards: the why a report and a mail show beside the change."""
    bench = lookup(COMMAND)
    sides = [ComparisonSide(label=build.commit[:12], kernel=None, benchmark=bench,
                            request=side_request(instance, build)) for build in (base, new)]
    outcome = run_interleaved(store, sides, LocalTarget(), budget_s=budget_s, metric=metric, alpha=alpha,
                              margin=None, margin_from_noise=True, seed=seed, tags=tags)
    if instance.profile:
        profile_sides(store, [ProfiledSide(side.label, side.run_id, bench, side.side.request)
                              for side in outcome.sides], LocalTarget())
    sequential = outcome.sequential[sides[1].label]
    assert sequential.last is not None and sequential.last.verdict is not None
    primary = outcome.metrics[0].name
    return BuildComparison(
        base=SideSummary.of(base.commit, outcome.side_values(0, primary)),
        new=SideSummary.of(new.commit, outcome.side_values(1, primary)),
        verdict=sequential.last.verdict.to_dict(), blocks=outcome.blocks, elapsed_s=outcome.elapsed_s,
        design=outcome.design, run_ids=[side.run_id for side in outcome.sides],
    )
