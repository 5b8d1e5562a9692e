"""The stored run: one run as kept in the store, with its samples, metric series and summaries.

This is the one run model the readers share: ``kbench show`` and ``kbench run`` render it
(``kbench.report.run_json``), compare judges it (``engine/stored_comparison.py``), the
exporters and the dashboard read it. The summaries are the ones stored with the run
(computed once, when it was measured); only a run stored without them is summarised again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from kbench.contract.measurement import Measurement
from kbench.contract.series import MetricSeries
from kbench.engine.series import metric_series
from kbench.stats.summary import Summary, summarize
from kbench.store.db import RunRecord, Store

if TYPE_CHECKING:
    from kbench.engine.runner import RunResult


@dataclass(frozen=True)
class StoredRun:
    """A run of the store: its row (``record``), its samples as a measurement, and what they mean.

    ``values`` are the primary metric's per-operation values in ``record.unit``, in sample
    order; ``series`` every metric's, the primary one first; ``summary`` the primary
    metric's summary and ``summaries`` every metric's stored one, by name.
    """

    record: RunRecord
    measurement: Measurement
    values: np.ndarray
    summary: Summary | None
    basis: str  # "raw" or "overhead-corrected"
    series: list[MetricSeries]
    summaries: dict[str, Summary] = field(default_factory=dict)

    @property
    def run_id(self) -> int:
        return self.record.id

    @property
    def metric(self) -> str:
        return self.record.metric

    @property
    def unit(self) -> str:
        return self.record.unit

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def warnings(self) -> list[str]:
        return self.record.warnings

    @classmethod
    def of_result(cls, result: RunResult, record: RunRecord) -> StoredRun:
        """The run just measured (``result``) with its stored row: nothing is read again but the row."""
        return cls(record, result.measurement, result.per_op_values, result.summary, result.basis, result.series,
                   stored_summaries(record))


def load_stored_run(store: Store, run_id: int) -> StoredRun:
    """Load a run and its samples and rebuild its metric series (RunNotFound if there is none)."""
    record = store.get_run(run_id)
    columns = store.load_samples(run_id)
    measurement = Measurement(
        header=record.probe_header or {},
        columns=columns,
        interrupted=record.status == "interrupted",
        stderr=record.tool_output or "",
    )
    subtract = bool(record.request.get("subtract_overhead"))
    series = metric_series(measurement, record.metric, record.unit, record.direction, subtract_overhead=subtract)
    values = series[0].values if series else np.empty(0)
    summaries = stored_summaries(record)
    summary = summaries.get(record.metric) or (summarize(values) if values.size else None)
    return StoredRun(
        record=record,
        measurement=measurement,
        values=values,
        summary=summary,
        basis="overhead-corrected" if subtract else "raw",
        series=series,
        summaries=summaries,
    )


def stored_run(store: Store, result: RunResult) -> StoredRun:
    """The run ``execute_run`` just measured and stored, as the store now holds it."""
    return StoredRun.of_result(result, store.get_run(result.run_id))


def stored_summaries(record: RunRecord) -> dict[str, Summary]:
    """The summary stored for each metric of the run (none for a run that stored none)."""
    found = {}
    for row in record.summaries:
        try:
            found[row["metric"]] = Summary.from_dict(row["details"])
        except (KeyError, TypeError, ValueError):
            continue  # stored by a kbench whose Summary had other fields: summarised again
    return found
