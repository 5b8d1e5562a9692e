"""A counted run in words and in JSON (``kbench run --metric instructions``, ``kbench show``).

Light on purpose: ``show`` imports it, and reads no more than numpy (docs/architecture.md).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from kbench.contract.counts import COUNTS_FORMAT, NOT_TIME

if TYPE_CHECKING:
    from kbench.engine.stored_run import StoredRun


def is_counted(run: StoredRun) -> bool:
    return run.measurement.header.get("format") == COUNTS_FORMAT


def count_text(value: float) -> str:
    """A count per operation: whole numbers as they are, others with up to 6 significant digits."""
    if not math.isfinite(value):
        return "n/a"
    return f"{value:.0f}" if value == int(value) else f"{value:.6g}"


def counter_text(source: dict[str, Any]) -> str:
    return f"{source.get('tool', '?')}; sees {source.get('scope', '?')}; a sample: {source.get('region', '?')}"


def counted_run_json(run: StoredRun) -> dict[str, Any]:
    """What a counted run adds to its JSON (``instructions``): the counter, the count per
    operation and whether every sample repeated it, kernel and user apart."""
    header = run.measurement.header
    values = run.values
    modes = {s.name.rsplit(".", 1)[1]: float(np.mean(s.values)) for s in run.series[1:] if s.values.size}
    return {
        "source": header.get("source"),
        "per_op": float(np.mean(values)) if values.size else None,
        "repeated": bool(values.size >= 2 and np.all(values == values[0])),
        "batch": header.get("batch"),
        "modes": modes,
        "interrupts": header.get("interrupts"),
        "slowdown": header.get("slowdown"),
        "note": NOT_TIME,
    }


def counted_run_lines(run: StoredRun) -> list[str]:
    """A counted run in words: its count per operation, whether the samples repeated it, the
    modes apart, the counter, and that instructions are not time."""
    header = run.measurement.header
    source = header.get("source") or {}
    summary = counted_run_json(run)
    values = run.values
    lines = [f"{run.metric}  run {run.run_id}  {run.status}  ({source.get('tool', '?')})"]
    if not values.size:
        return [*lines, "no samples were counted"]
    per_op = float(np.mean(values))
    batch = int(header.get("batch") or 1)
    if values.size == 1:
        lines.append(f"{count_text(per_op)} instructions per operation: one count of the run's {batch} operations "
                     "(a second run tells whether it repeats)")
    elif summary["repeated"]:
        lines.append(f"{count_text(per_op)} instructions per operation: all {values.size} samples counted the same "
                     f"({count_text(per_op * batch)} per sample of {batch} operation{'s' if batch != 1 else ''})")
    else:
        lines.append(f"{count_text(per_op)} instructions per operation (mean over {values.size} samples; they varied "
                      f"{count_text(float(np.min(values)))}…{count_text(float(np.max(values)))}, median "
                      f"{count_text(float(np.median(values)))}): {source.get('varies', '')}")
    if summary["modes"]:
        lines.append("  " + ", ".join(f"{mode} {count_text(value)}" for mode, value in summary["modes"].items())
                     + " per operation")
    lines.append(f"counter: {counter_text(source)}")
    if header.get("interrupts"):
        lines.append(f"interrupts: {header['interrupts']}")
    slowdown = header.get("slowdown") or {}
    if slowdown.get("factor"):
        lines.append(f"valgrind ran it {slowdown['factor']:g}x slower than natively ({slowdown['counted_s']:g} s "
                     f"against {slowdown['native_s']:g} s an execution)")
    elif header.get("counted_s"):
        lines.append(f"the run took {header['counted_s']:g} s under valgrind")
    lines.append(f"warning: {NOT_TIME}")
    # a count repeats or not: a distribution-free interval of its median says nothing more
    lines.extend(f"warning: {w}" for w in run.warnings if not w.startswith("ci-level-unreachable"))
    return lines
