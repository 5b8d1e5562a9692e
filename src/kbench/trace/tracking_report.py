"""What a tracked run shows: its entries and utilisation as text, JSON and metric series.

Metric series (one value per run, so ``kbench compare`` of stored runs judges them like
any metric), named after the run's metric without its last part (``syscall.getppid``):
``.util.thread``, ``.util.others``, ``.util.idle`` (shares of the measured CPUs' time),
``.entries.per_op`` and ``.entries.interrupts_per_op``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from kbench.contract.series import MetricSeries
from kbench.trace.entries import EntrySummary
from kbench.trace.tracking import tracking_of
from kbench.trace.utilisation import Utilisation

if TYPE_CHECKING:
    from kbench.contract.measurement import Measurement

SHOWN_KEYS = 10


def tracking_series(measurement: Measurement, metric: str) -> list[MetricSeries]:

    entries, util = tracking_of(measurement.header)
    prefix = metric.rsplit(".", 1)[0] if metric.count(".") >= 2 else metric
    found = []
    if util is not None:
        shares = util.fractions()
        for name, direction in (("thread", "higher"), ("others", "lower"), ("idle", "lower")):
            if name in shares:
                found.append(MetricSeries(f"{prefix}.util.{name}", "fraction", direction,
                                          np.array([shares[name]])))
    if entries is not None and entries.per_op:
        found.append(MetricSeries(f"{prefix}.entries.per_op", "entries", "lower",
                                  np.array([entries.per_op["all"]])))
        interrupts = sum(entries.per_op.get(kind, 0.0) for kind in ("irq", "softirq", "vector"))
        found.append(MetricSeries(f"{prefix}.entries.interrupts_per_op", "entries", "lower", np.array([interrupts])))
    return found


def _ns(value: float | None) -> str:
    if value is None:
        return "untimed"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value:.0f} ns"


def entry_lines(summary: EntrySummary) -> list[str]:
    cpus = ",".join(map(str, summary.cpus)) or "-"
    lines = [f"source {summary.source}, CPUs {cpus}, tracked {_ns(summary.span_ns)}"]
    for row in summary.kinds:
        lines.append(f"  {row.label:<12} {row.count:>9}  total {_ns(row.total_ns):>10}  median {_ns(row.median_ns)}")
    if summary.keys:
        lines.append(f"  by syscall / irq (top {min(SHOWN_KEYS, len(summary.keys))} of {len(summary.keys)} by time)")
    for row in summary.keys[:SHOWN_KEYS]:
        lines.append(f"    {row.label:<30} {row.count:>9}  total {_ns(row.total_ns):>10}  median {_ns(row.median_ns)}")
    if summary.ops:
        per_op = "  ".join(f"{kind} {value:.4g}" for kind, value in summary.per_op.items() if value)
        lines.append(f"  timed region: {summary.region} ({_ns(summary.region_ns)}, {summary.ops} {summary.op}s)")
        lines.append(f"  entries per {summary.op}: {per_op or '0 (no kernel entry was tracked in the timed region)'}")
    else:
        lines.append(f"  timed region: {summary.region}")
    if summary.in_region:
        listed = ", ".join(f"{label} {count}" for label, count in sorted(summary.in_region.items(),
                                                                        key=lambda item: -item[1])[:8])
        lines.append(f"  unexpected in the timed region: {listed}")
    lost = ", ".join(f"{name} {count}" for name, count in summary.lost.items() if count)
    if lost:
        lines.append(f"  lost: {lost}")
    return lines


def utilisation_lines(util: Utilisation) -> list[str]:
    hz = util.tsc_khz * 1e3
    lines = [f"source {util.source}, context-switch accounting, the benchmark's threads: "
             f"{', '.join(map(str, sorted(util.measured))) or 'none found'}"]
    for split in util.split():
        if util.measured_cpus and split.cpu not in util.measured_cpus:
            continue
        total = split.total or 1
        lines.append(
            f"  CPU {split.cpu}: benchmark {100 * split.measured / total:5.1f}%  others "
            f"{100 * (split.others + split.lost) / total:5.1f}%  idle {100 * split.idle / total:5.1f}%  "
            f"of {split.total / hz:.3f} s ({split.total} cycles; accounted {100 * split.accounted / total:.2f}%)"
        )
    busiest = util.busiest_others()
    if busiest:
        lines.append("  others that ran most: " + ", ".join(
            f"{comm or '?'}[{pid}] {cycles / hz * 1e3:.1f} ms" for comm, pid, cycles in busiest))
    return lines


def tracking_lines(header: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """(section title, lines) for each tracked thing of a run."""
    entries, util = tracking_of(header)
    sections = []
    if entries is not None:
        sections.append(("kernel entries", entry_lines(entries)))
    if util is not None:
        sections.append(("CPU utilisation", utilisation_lines(util)))
    return sections


def tracking_json(header: dict[str, Any]) -> dict[str, Any]:
    data = header.get("tracking")
    if not isinstance(data, dict):
        return {}
    entries, util = tracking_of(header)
    shown: dict[str, Any] = {"source": data.get("source"), "cpus": data.get("cpus")}
    if entries is not None:
        shown["entries"] = entries.to_json()
    if util is not None:
        shown["utilisation"] = {**util.fractions(), "per_cpu": [
            {"cpu": s.cpu, "measured": s.measured, "others": s.others, "idle": s.idle, "lost": s.lost,
             "total": s.total} for s in util.split()], "measured_threads": sorted(util.measured)}
    return {"tracking": shown}
