"""A counted run as a measurement: its header and its columns of instructions, and its series.

Columns (u64, one row per sample): ``user`` and, where the counter sees the kernel, ``kernel``:
the instructions a sample's ``batch`` operations executed in each mode. The header names the
counter (``source``, docs/instructions.md), what one sample is, and why repeated counts may
differ with that counter; ``per_op`` values are ``(user + kernel) / batch``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kbench.contract.counts import COUNTS_FORMAT
from kbench.contract.measurement import Measurement
from kbench.contract.series import MetricSeries
from kbench.kinds.base import PrimaryMetric
from kbench.kinds.instructions.source import CountSource

COLUMNS = ("user", "kernel")


def counted_measurement(
    source: CountSource, *, workload: str, params: Mapping[str, str], batch: int,
    user: Sequence[int] | np.ndarray | None, kernel: Sequence[int] | np.ndarray | None, interrupted: bool = False,
    details: Mapping[str, Any] | None = None, warnings: Sequence[str] = (), stderr: str = "",
) -> Measurement:
    """A measurement of counted samples: ``user`` and ``kernel`` instructions per sample of
    ``batch`` operations (either None where the counter does not see that mode)."""
    columns = {mode: np.asarray(values, dtype=np.uint64)
               for mode, values in (("user", user), ("kernel", kernel)) if values is not None}
    if not columns:
        raise ValueError("a counted measurement needs user or kernel counts")
    n = int(next(iter(columns.values())).size)
    header: dict[str, Any] = {
        "format": COUNTS_FORMAT,
        "workload": workload,
        "params": dict(params),
        "source": source.to_dict(),
        "unit": "instructions",
        "batch": batch,
        "columns": list(columns),
        "n": n,
        "interrupted": interrupted,
        "warnings": list(warnings),
        **dict(details or {}),
    }
    return Measurement(header=header, columns=columns, interrupted=interrupted, stderr=stderr)


def per_op(measurement: Measurement, modes: Sequence[str] = COLUMNS) -> np.ndarray:
    """Each sample's instructions per operation, over ``modes`` (the columns it has of them)."""
    batch = float(measurement.header.get("batch") or 1)
    total = np.zeros(measurement.n, dtype=np.float64)
    for mode in modes:
        if mode in measurement.columns:
            total += measurement.columns[mode].astype(np.float64)
    return total / batch


def count_series(measurement: Measurement, primary: PrimaryMetric) -> list[MetricSeries]:
    """The instructions per operation of every sample (the primary series), then, where the
    counter told kernel and user apart, each mode's own (``<metric>.user``, ``<metric>.kernel``)."""
    if measurement.n == 0:
        return []
    found = [MetricSeries(primary.name, primary.unit, primary.direction, per_op(measurement))]
    if all(mode in measurement.columns for mode in COLUMNS):
        found += [MetricSeries(f"{primary.name}.{mode}", primary.unit, primary.direction, per_op(measurement, (mode,)))
                  for mode in COLUMNS]
    return found
