"""LKP's monitors a job takes (``monitors: {vmstat: 1, ...}``, or each at top level): put on the instances
of whole tools, whose iterations they sample (``kbench.kinds.suite.monitoring``); for any other kind of
benchmark a warning says they are not taken (as for ``counters`` and ``profile``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from kbench.catalog.benchmarks import lookup
from kbench.jobs.instance import JobInstance
from kbench.jobs.problems import ProblemCollector
from kbench.kinds.registry import kind_of


def with_monitors(spec: Any, instances: list[JobInstance], problems: ProblemCollector) -> list[JobInstance]:
    """``instances`` with the job's monitors (``spec.monitors``: (name, interval, line)) where they are taken."""
    if not spec.monitors:
        return instances
    monitors = {name: interval for name, interval, _ in spec.monitors}
    line = min(where for _, _, where in spec.monitors)
    shown = ", ".join(monitors)
    out = []
    for instance in instances:
        kind = kind_of(lookup(instance.benchmark))
        if kind.whole_tool:
            out.append(dataclasses.replace(instance, monitors=monitors))
        else:
            problems.warn(line, "monitors", f"ignored for {instance.benchmark}: {shown} are sampled around whole "
                                            f"tools' iterations, not taken for {kind.name} benchmarks yet",
                          instance.benchmark)
            out.append(instance)
    return out
