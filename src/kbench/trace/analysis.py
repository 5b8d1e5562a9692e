"""Per-key distributions of a log: one series per traced function and tracepoint key.

Every statistic is over the measured entries (``selection.measured_entries``) of one
(kind, key), in cycles between start and stop, nothing subtracted. Percentiles and the
MAD are those of ``kbench.stats.summary`` (type 7; raw MAD = median |x - median|).
``combine_keys`` sums keys logged one after another along one path (the seed's keys
2 + 3 example).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from kbench.stats.histogram import log2_histogram
from kbench.stats.summary import summarize
from kbench.trace.log import FLAG_SWITCHED, KIND_FUNCTION, KIND_NAMES, KIND_TRACEPOINT, TraceLog
from kbench.trace.selection import Selection, measured_entries

UNIT = "cycles"


@dataclass(frozen=True)
class KeySeries:
    """The cycles of one (kind, key), in log order, with what to call them."""

    kind: int
    key: int
    name: str  # the function, the key's name, or ""
    label: str  # for people: "fib_table_lookup", "key 3 (lookup)", "keys 2+3"
    metric: str  # trace.<function>.cycles, trace.key3.cycles, trace.key2+3.cycles
    values: np.ndarray  # float64 cycles
    switched: int = 0  # entries whose task was switched out inside


def metric_for(log: TraceLog, kind: int, key: int) -> str:
    if kind == KIND_FUNCTION:
        return f"trace.{log.functions.get(key, f'slot{key}')}.cycles"
    if kind == KIND_TRACEPOINT:
        return f"trace.key{key}.cycles"
    return f"trace.{KIND_NAMES.get(kind, f'kind{kind}')}{key}.cycles"


def key_series(log: TraceLog, selection: Selection | None = None) -> list[KeySeries]:
    """One series per (kind, key) with measured entries: functions by slot, then keys."""
    entries = (selection or measured_entries(log)).entries
    entries = entries[np.isin(entries["kind"], (KIND_FUNCTION, KIND_TRACEPOINT))]
    found = []
    pairs = sorted({(int(k), int(c)) for k, c in zip(entries["kind"], entries["key"], strict=True)},
                   key=lambda pair: (pair[0] != KIND_FUNCTION, pair))
    for kind, key in pairs:
        mine = entries[(entries["kind"] == kind) & (entries["key"] == key)]
        name = log.functions.get(key, "") if kind == KIND_FUNCTION else log.names.get(key, "")
        found.append(
            KeySeries(
                kind=kind, key=key, name=name, label=log.label(kind, key), metric=metric_for(log, kind, key),
                values=mine["cycles"].astype(np.float64),
                switched=int(np.count_nonzero(mine["flags"] & FLAG_SWITCHED)),
            )
        )
    return found


def combine_keys(log: TraceLog, keys: Sequence[int], selection: Selection | None = None) -> KeySeries:
    """Cycles of tracepoint keys ``keys[0] + keys[1] + …`` logged in that order along one path.

    Per task and CPU, in start order, a chain starts at an entry of ``keys[0]`` and takes
    the next entry if it is of the next key; an entry of any other listed key breaks the
    chain. Each completed chain gives one value, the sum of its entries' cycles.
    """
    if len(keys) < 2 or len(set(keys)) != len(keys):
        raise ValueError(f"give two or more distinct keys to sum, not {list(keys)}")
    entries = (selection or measured_entries(log)).entries
    mine = entries[(entries["kind"] == KIND_TRACEPOINT) & np.isin(entries["key"], list(keys))]
    order = np.lexsort((mine["start"], mine["cpu"], mine["pid"]))
    sums: list[float] = []
    position, total, owner = 0, 0.0, None
    for entry in mine[order]:
        who = (int(entry["pid"]), int(entry["cpu"]))
        key = int(entry["key"])
        if key == keys[0]:
            position, total, owner = 1, float(entry["cycles"]), who
        elif owner == who and position and key == keys[position]:
            position += 1
            total += float(entry["cycles"])
        else:
            position, owner = 0, None
            continue
        if position == len(keys):
            sums.append(total)
            position, owner = 0, None
    joined = "+".join(str(k) for k in keys)
    return KeySeries(
        kind=KIND_TRACEPOINT, key=keys[0], name="", label=f"keys {joined}", metric=f"trace.key{joined}.cycles",
        values=np.asarray(sums, dtype=np.float64),
    )


def series_json(series: KeySeries, tsc_khz: int) -> dict[str, Any]:
    """One object of the ``trace`` list: count, min, median, p90, p99, max, MAD, histogram."""
    data: dict[str, Any] = {
        "key": series.key,
        "kind": KIND_NAMES.get(series.kind, str(series.kind)),
        "name": series.name or None,
        "label": series.label,
        "metric": series.metric,
        "unit": UNIT,
        "count": int(series.values.size),
        "switched": series.switched,
    }
    if series.values.size:
        summary = summarize(series.values, detect_warmup=False)
        histogram = log2_histogram(series.values)
        data.update(
            min=summary.min, median=summary.p50, p90=summary.p90, p99=summary.p99, max=summary.max,
            mad=summary.mad, mean=summary.mean,
            median_ns=summary.p50 * 1e6 / tsc_khz if tsc_khz else None,
            log2_histogram=[
                {"low": float(histogram.edges[i]), "high": float(histogram.edges[i + 1]), "count": int(count)}
                for i, count in enumerate(histogram.counts)
            ],
        )
    return data


def trace_json(log: TraceLog, sums: Sequence[Sequence[int]] = ()) -> list[dict[str, Any]]:
    """The ``trace`` list of ``--json``: one object per function and key, then each sum."""
    selection = measured_entries(log)
    found = key_series(log, selection) + [combine_keys(log, keys, selection) for keys in sums]
    return [series_json(series, log.tsc_khz) for series in found]


def log_facts(log: TraceLog) -> dict[str, Any]:
    """What the kernel counted about the log, and what the selection left out."""
    selection = measured_entries(log)
    return {
        "entries": log.n,
        "measured": int(selection.entries.size),
        "outside_run": selection.outside,
        "overflow": log.overflow,
        "invalid_keys": int(log.status.get("invalid_keys", 0)),
        "foreign_stops": int(log.status.get("foreign_stops", 0)),
        "layout": log.status.get("layout"),
        "size": int(log.status.get("size", 0)),
    }
