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
from kbench.engine.interleaved_outcome import InterleavedOutcome
from kbench.report.comparison import ComparisonReport
from kbench.report.comparison.build import blocks_parameters, metric_comparison, slot_side


def copy_values(outcome: InterleavedOutcome, metric: str) -> list[float]:
    """Each side's copy value (``copy_value``) against side 0, the base's first copy (0 by definition)."""
    return [0.0] + [copy_value(outcome.log_ratios(side, metric)) for side in range(1, len(outcome.sides))]


def build_members(build_of: Sequence[int], builds: int) -> list[list[int]]:
    """The sides of each build, in order."""
    return [[side for side, of in enumerate(build_of) if of == build] for build in range(builds)]


def copies_text(builds: Sequence[str], members: Sequence[Sequence[int]], values: Sequence[float]) -> str:
    """"old.c: +0.00%, -0.04%, ...; new.c: ...": each copy's change against the base's first copy."""
    return "; ".join(f"{label}: " + ", ".join(f"{100 * math.expm1(values[side]):+.2f}%" for side in group)
                     for label, group in zip(builds, members, strict=True))


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
    values = copy_values(outcome, name)
    base_slots = np.asarray(outcome.side_values(0, name), dtype=np.float64)
    base_scale = float(np.nanmedian(base_slots)) if base_slots.size else math.nan
    members = build_members(build_of, len(builds))
    design = (f"{len(members[0])} copies of each build, each loaded at an address of its own, all alternated in the "
              "blocks; a copy's value: the median over blocks of log(copy / base copy 1); builds judged on their "
              "copies' values (Student's t, pooled variance), so the spread between placements is part of the error")

    def pooled(build: int) -> list[float]:
        return [value for side in members[build] for value in outcome.side_values(side, name)]

    metrics = []
    base_copies = [values[side] for side in members[0]]
    for build in range(1, len(builds)):
        verdict = judge_copies(base_copies, [values[side] for side in members[build]], base_scale=base_scale,
                               metric=name, unit=primary.unit, direction=primary.direction, alpha=alpha,
                               margin=margin, design=design)
        compared = metric_comparison(verdict, builds[build], slot_side(pooled(0)), slot_side(pooled(build)))
        metrics.append(replace(compared, ns_per_unit=outcome.ns_per_unit.get(name)))
    base_copy = outcome.measured_labels[0] if outcome.measured_labels else outcome.sides[0].label
    extra = blocks_parameters(outcome, f"{design}. Blocks: {outcome.design}",
                              copies=f"{name} of each copy against {base_copy}: {copies_text(builds, members, values)}")
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
