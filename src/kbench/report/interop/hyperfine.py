"""Runs as hyperfine's ``--export-json`` file: ``{"results": [result per group]}``.

A result has ``command``, ``mean``, ``stddev`` (sample standard deviation, n - 1), ``median``,
``min``, ``max`` and ``times`` (every value, in seconds) as hyperfine writes them; ``user``,
``system``, ``exit_codes`` and ``parameters`` as the imported file had them (a run imported
from hyperfine gives its result back), else ``parameters`` holds the run's kbench
parameters and the others are left out (kbench does not know them). ``command`` is the
imported command, else ``BENCHMARK k=v ...`` (``(runs 1,2)`` appended for a side of
several runs). A metric that is not a time cannot be written.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any

from kbench.report.interop.common import Group, describe, imported, seconds


def render(groups: Sequence[Group]) -> bytes:
    return (json.dumps({"results": [result(group) for group in groups]}, indent=2) + "\n").encode()


def result(group: Group) -> dict[str, Any]:
    times: list[float] = []
    for view in group.views:
        scale = seconds(view, "hyperfine")
        times += [float(v) * scale for v in view.values]
    source = [imported(view, "hyperfine") for view in group.views]
    first = source[0]
    command = str(first["command"]) if first is not None else describe(group.first)
    if len(group.views) > 1:
        command += f" ({group.label})"
    found: dict[str, Any] = {
        "command": command,
        "mean": statistics.fmean(times),
        "stddev": statistics.stdev(times) if len(times) > 1 else None,
        "median": statistics.median(times),
    }
    if all(s is not None for s in source):
        for key in ("user", "system"):
            if all(isinstance(s.get(key), int | float) for s in source if s is not None):
                found[key] = statistics.fmean(float(s[key]) for s in source if s is not None)  # type: ignore[arg-type]
    found["min"] = min(times)
    found["max"] = max(times)
    found["times"] = times
    codes = [view.measurement.columns.get("exit_code") for view in group.views]
    if all(c is not None for c in codes):
        found["exit_codes"] = [int(code) for c in codes if c is not None for code in c]
    if first is not None and first.get("parameters"):
        found["parameters"] = first["parameters"]
    elif first is None and group.first.record.params:
        found["parameters"] = {str(k): str(v) for k, v in group.first.record.params.items()}
    return found
