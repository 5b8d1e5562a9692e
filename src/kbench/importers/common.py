"""What every importer of another tool's results does: one metric series per sample column,
summarised as kbench summarises its own runs, in a run header of the suite format.

An imported run is stored like a whole-tool (suite) run: ``columns`` holds one value per
execution of the thing measured (a command's wall time, a pyperf value) under the metric's
name, and the header lists the metrics (name, unit, direction). The header's ``imported``
entry keeps what the tool's file said that kbench has no column for, so an export in the
same format gives the file back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from kbench.contract.formats import SUITE_FORMAT
from kbench.contract.vocabulary import LOWER_IS_BETTER
from kbench.engine.runner import summary_columns
from kbench.stats.summary import summarize
from kbench.store.db import SummaryRecord
from kbench.store.recovery import PendingRun


@dataclass(frozen=True)
class ImportedMetric:
    """One metric of an imported run: its name ``<tool>.<test>.<stat>``, unit and values in order."""

    name: str
    unit: str
    values: Sequence[float]
    direction: str = LOWER_IS_BETTER


def imported_run(
    *,
    tool: str,
    benchmark: str,
    params: Mapping[str, str],
    metrics: Sequence[ImportedMetric],
    extra_columns: Mapping[str, np.ndarray],
    imported: Mapping[str, Any],
    started_at: datetime,
    tags: Sequence[str] = (),
) -> PendingRun:
    """A complete run of ``benchmark`` whose first metric is the primary one."""
    primary = metrics[0]
    columns: dict[str, np.ndarray] = {m.name: np.asarray(m.values, dtype=np.float64) for m in metrics}
    columns.update(extra_columns)
    records = []
    for metric in metrics:
        values = columns[metric.name]
        if values.size:
            summary = summarize(values)
            records.append(SummaryRecord(metric=metric.name, unit=metric.unit, basis="raw",
                                         values=summary_columns(summary), details=summary.to_dict()))
    header = {
        "format": SUITE_FORMAT,
        "workload": benchmark,
        "tool": tool,
        "params": dict(params),
        "metrics": [{"name": m.name, "unit": m.unit, "direction": m.direction} for m in metrics],
        "imported": dict(imported),
    }
    n = len(primary.values)
    return PendingRun(
        run={
            "benchmark": benchmark, "metric": primary.name, "unit": primary.unit, "direction": primary.direction,
            "params": dict(params), "request": {"benchmark": benchmark, "params": dict(params), "iterations": n,
                                                "imported": tool},
            "sysinfo": None, "target": None, "tags": [f"imported:{tool}", *tags],
            "started_at": started_at.isoformat(),
        },
        status="complete",
        columns=columns,
        probe_header=header,
        summaries=records,
        warnings=[f"imported from {tool}'s file {imported.get('file', '?')}: no machine inventory or kernel "
                  "target was recorded with it"],
        error=None,
        tool_output=None,
    )


def load_json_object(path: Any, tool: str) -> dict[str, Any]:
    """The JSON object in ``path``, gzip-compressed or not (ValueError naming the file and
    the tool otherwise)."""
    import gzip
    import json

    try:
        with open(path, "rb") as f:
            data = f.read()
        if data.startswith(b"\x1f\x8b"):
            data = gzip.decompress(data)
        document = json.loads(data)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read it as {tool} JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise ValueError(f"{path}: not {tool} JSON (a JSON object expected)")
    return document
