"""The report of a comparison of module builds measured as copies of each (``kbench.compare.placement``).

The interleaved design measured every copy against the base's first copy; here the copies of
one build are pooled into that build's side, the builds are judged on their copies' values,
and the parameters list each copy's change, so that the spread between placements is read
next to the difference between builds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from kbench.compare.placement import copy_value, judge_copies
from kbench.engine.interleaved import InterleavedOutcome
from kbench.report.comparison import ComparisonReport
from kbench.report.comparison.build import blocks_parameters, metric_comparison, slot_side


def build_copies_report(
    outcome: InterleavedOutcome,
    builds: Sequence[str],
    build_of: Sequence[int],
    *,
    title: str,
    alpha: float,
    margin: float | None,
    context: dict[str, Any],
    parameters: dict[str, Any],
) -> ComparisonReport:
    """One verdict per new build on the primary metric (its copies against the base's)."""
    primary = outcome.metrics[0]
    name = primary.name
    values = [0.0] + [copy_value(outcome.log_ratios(side, name)) for side in range(1, len(outcome.sides))]
    base_slots = np.asarray(outcome.side_values(0, name), dtype=np.float64)
    base_scale = float(np.nanmedian(base_slots)) if base_slots.size else math.nan
    per_build = len(build_of) // len(builds)
    design = (f"{per_build} copies of each build, each loaded at an address of its own, all alternated in the "
              "blocks; a copy's value: the median over blocks of log(copy / base copy 1); builds judged on their "
              "copies' values (Student's t, pooled variance), so the spread between placements is part of the error")

    def members(build: int) -> list[int]:
        return [side for side, of in enumerate(build_of) if of == build]

    def pooled(build: int) -> list[float]:
        return [value for side in members(build) for value in outcome.side_values(side, name)]

    metrics = []
    base_copies = [values[side] for side in members(0)]
    for build in range(1, len(builds)):
        verdict = judge_copies(base_copies, [values[side] for side in members(build)], base_scale=base_scale,
                               metric=name, unit=primary.unit, direction=primary.direction, alpha=alpha,
                               margin=margin, design=design)
        compared = metric_comparison(verdict, builds[build], slot_side(pooled(0)), slot_side(pooled(build)))
        metrics.append(replace(compared, ns_per_unit=outcome.ns_per_unit.get(name)))
    copies = "; ".join(
        f"{label}: " + ", ".join(f"{100 * math.expm1(values[side]):+.2f}%" for side in members(build))
        for build, label in enumerate(builds))
    base_copy = outcome.measured_labels[0] if outcome.measured_labels else outcome.sides[0].label
    extra = blocks_parameters(outcome, f"{design}. Blocks: {outcome.design}",
                              copies=f"{name} of each copy against {base_copy}: {copies}")
    return ComparisonReport(
        title=title,
        base_label=builds[0],
        new_labels=tuple(builds[1:]),
        metrics=tuple(metrics),
        label_kind="module",
        context=context,
        parameters={**parameters, **extra},
        correction=None,
        confidence=1 - alpha,
    )
