"""Runs as Go benchmark text for ``benchstat``: a line per trial.

``Benchmark<Name>/<param>=<value>... <iterations> <value> <unit>``: the name is the metric's
(``report.gobench_format.benchmark_name``) with the run's parameters as sub-benchmark
keys (blanks and other characters benchstat reads as separators become ``_``; for the sides
of a comparison only the parameters every run shares, so that benchstat lines the sides
up, the side's label naming the rest); the value is
the trial's median (a run is one trial; an imported run's executions or processes are one
each) and iterations the trial's value count. Times are written in ``ns/op`` (benchstat
shows sec/op); other units as ``kbench compare --format gobench`` writes them. Groups of
several sides each follow a ``kbench-side: <label>`` line, so ``benchstat -col kbench-side
FILE`` compares them. Every piece is written by ``report.gobench_format``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from kbench.contract.vocabulary import HIGHER_IS_BETTER
from kbench.report.gobench_format import benchmark_name, config_line, header, number, result_line, side_key, unit_for
from kbench.report.interop.common import SECONDS_PER_UNIT, Group, trials

VALUE_DIGITS = 9
"""Significant digits of a trial's median."""


def render(groups: Sequence[Group]) -> bytes:
    units: dict[str, bool] = {}
    body: list[str] = []
    shared = _shared_params(groups) if any(group.side for group in groups) else None
    for group in groups:
        if len(groups) > 1:
            body.append(config_line(side_key("side"), group.label))
        for view in group.views:
            record = view.record
            unit, scale = _unit(record.metric, record.unit)
            units.setdefault(unit, record.direction == HIGHER_IS_BETTER)
            params = {k: v for k, v in (record.params or {}).items() if shared is None or k in shared}
            name = benchmark_name(record.metric) + "".join(
                f"/{_safe(str(key))}={_safe(str(value))}" for key, value in params.items())
            for values in trials(view):
                if values.size:
                    median = float(np.median(values)) * scale
                    body.append(result_line(name, values.size, number(median, VALUE_DIGITS), unit))
    return ("\n".join([*header(units), *body]) + "\n").encode()


def _shared_params(groups: Sequence[Group]) -> set[str]:
    """The parameters with one value in every run of every group."""
    items = [set((k, str(v)) for k, v in (view.record.params or {}).items()) for g in groups for view in g.views]
    return {key for key, _ in set.intersection(*items)} if items else set()


def _unit(metric: str, unit: str) -> tuple[str, float]:
    """A time is written in ns/op (only the primary metric is written, so no two metrics share
    a benchmark line); another unit as the comparison report writes it."""
    if unit in SECONDS_PER_UNIT:
        return "ns/op", SECONDS_PER_UNIT[unit] / 1e-9
    return unit_for(metric, unit), 1.0


def _safe(text: str) -> str:
    return re.sub(r"[\s/=]+", "_", text) or "_"
