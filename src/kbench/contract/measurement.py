"""The raw outcome of one run: its header and every sample column, in order."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Measurement:
    """The raw outcome of one run: header, every column in order, and status."""

    header: dict[str, Any]
    columns: dict[str, np.ndarray]
    interrupted: bool
    stderr: str

    @property
    def failed_executions(self) -> int:
        """Measured executions that failed and were timed anyway (``--ignore-failure``); 0 otherwise."""
        failure = self.header.get("failure")
        return int(failure.get("count") or 0) if isinstance(failure, dict) else 0

    @property
    def n(self) -> int:
        return int(next(iter(self.columns.values())).size) if self.columns else 0

    def per_op(self, unit: str = "ns", *, subtract_overhead: bool = False) -> np.ndarray:
        """Every sample as ``unit`` per operation, in order.

        ``ns``: ``ticks / hz * 1e9 / batch``; ``cycles`` (in-kernel TSC ticks):
        ``ticks / batch``. With ``subtract_overhead`` the median cost of the empty timed
        region is removed from each sample first (floored at zero).
        """
        import numpy as np  # here: listing and validating benchmarks must not pay for numpy

        ticks = self.columns["ticks"].astype(np.float64)
        if subtract_overhead:
            ticks = np.maximum(ticks - float(self.header["overhead"]["median_ticks"]), 0.0)
        batch = int(self.header.get("batch") or 1)
        if unit == "cycles":
            return ticks / batch
        if unit != "ns":
            raise ValueError(f"cannot express timer ticks in {unit!r}")
        hz = float(self.header["timer"]["hz"])
        return ticks * (1e9 / hz) / batch

    def start_times_s(self) -> np.ndarray | None:
        """When each sample started, in seconds after the first sample started; None for runs
        without the probe's ``gap_ticks`` column (older probes, in-kernel runs).

        Sample i starts ``gap_ticks[i]`` timer ticks after sample i - 1 ended, which was
        ``ticks[i - 1]`` after it started (docs/probe-format.md), so the start times are the
        running sum of ticks and gaps.
        """
        import numpy as np

        if "gap_ticks" not in self.columns or "ticks" not in self.columns or not self.n:
            return None
        ticks = self.columns["ticks"].astype(np.float64)
        gaps = self.columns["gap_ticks"].astype(np.float64)
        starts = np.concatenate([[0.0], np.cumsum(ticks[:-1] + gaps[1:])])
        return starts / float(self.header["timer"]["hz"])

    def overhead_ns(self) -> dict[str, float]:
        hz = float(self.header["timer"]["hz"])
        overhead = self.header["overhead"]
        return {
            "min": overhead["min_ticks"] * 1e9 / hz,
            "median": overhead["median_ticks"] * 1e9 / hz,
        }
