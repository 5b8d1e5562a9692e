"""Perf event counters of a run: read from its header, scaled, per operation, derived, shown.

Whoever counted writes the same raw object into the measurement's header as ``counters``
(docs/probe-format.md): kbench-probe (``perf_event_open`` around its measured loop),
``perf stat`` around a whole tool (``kbench.profile.perf_stat``) or kbench.ko around its
timed loop::

    {"source": "perf_event_open", "scope": "user+kernel", "inherit": true,
     "operations": 32000,                       # optional: else n x batch of the header
     "events": [{"name": "task-clock", "type": "software", "supported": true, "unit": "ns",
                 "value": 4056754, "enabled_ns": 4056754, "running_ns": 4056754},
                {"name": "cycles", "type": "hardware", "supported": false, "errno": 2,
                 "error": "No such file or directory"}, ...]}

Definitions (as ``perf stat`` computes them):

- value: the raw count, scaled by enabled / running when the kernel multiplexed the
  event (it counted ``running_ns`` of the ``enabled_ns`` it was enabled); ``running_pct``
  = 100 running / enabled says how much was extrapolated. An event enabled but never
  running has no value ("not counted").
- per_op: value / operations (the operations of the measured region: samples x batch for
  the probe and kbench.ko, executions for a command).
- derived: ``ipc`` = instructions / cycles; ``branch-miss-rate`` = 100 branch-misses /
  branches; ``cache-miss-rate`` = 100 cache-misses / cache-references (each only when
  both events were counted).

An event the machine does not have is kept with ``supported: false`` and why: a VM
without a virtual PMU has no hardware events at all, and that must read as such, not as
a missing row.
"""

from __future__ import annotations

import errno as errno_codes
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kbench.contract.series import MetricSeries

SOFTWARE_EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults")
HARDWARE_EVENTS = ("cycles", "instructions", "branches", "branch-misses", "cache-references", "cache-misses")
EVENTS = SOFTWARE_EVENTS + HARDWARE_EVENTS
"""Every event counted, in the order they are shown (perf stat's default order)."""

METRIC_GROUP = "perf-stat"
"""Counter metrics are named ``<benchmark>.perf-stat.<event>`` (0-Day's ``perf-stat.*`` rows)."""

DERIVED: tuple[tuple[str, str, str, float, str, str], ...] = (
    # name, numerator, denominator, scale, unit, direction
    ("ipc", "instructions", "cycles", 1.0, "insn/cycle", "higher"),
    ("branch-miss-rate", "branch-misses", "branches", 100.0, "%", "lower"),
    ("cache-miss-rate", "cache-misses", "cache-references", 100.0, "%", "lower"),
)

_WHY_UNSUPPORTED = {
    errno_codes.ENOENT: "no such event on this machine (no hardware PMU: typical of a VM)",
    errno_codes.EOPNOTSUPP: "this PMU does not support the event",
    errno_codes.ENODEV: "no such event on this machine",
    errno_codes.EACCES: "not permitted (perf_event_paranoid; run as root or with CAP_PERFMON)",
    errno_codes.EPERM: "not permitted (perf_event_paranoid; run as root or with CAP_PERFMON)",
    errno_codes.EINVAL: "the kernel refused the event's attributes",
}


@dataclass(frozen=True)
class EventCount:
    """One event of one run (module docstring for the definitions)."""

    name: str
    supported: bool
    unit: str = "count"  # "ns" (task-clock) or "count"
    raw: float | None = None
    enabled_ns: float | None = None
    running_ns: float | None = None
    reason: str | None = None  # why it is not supported, or not counted

    @property
    def running_pct(self) -> float | None:
        if not self.enabled_ns or self.running_ns is None:
            return None
        return 100.0 * self.running_ns / self.enabled_ns

    @property
    def multiplexed(self) -> bool:
        pct = self.running_pct
        return pct is not None and pct < 99.95

    @property
    def value(self) -> float | None:
        """The count over the whole enabled time (scaled when multiplexed); None when not counted."""
        if not self.supported or self.raw is None:
            return None
        if self.enabled_ns and self.running_ns is not None:
            if self.running_ns <= 0:
                return None
            if self.running_ns < self.enabled_ns:
                return self.raw * self.enabled_ns / self.running_ns
        return self.raw


@dataclass(frozen=True)
class Counters:
    """Every event counted for one run (or summed over the slots of one side)."""

    source: str
    scope: str
    events: tuple[EventCount, ...]
    operations: float | None = None
    operation: str = "op"  # what one operation is: "op", or "iteration" for a whole tool

    def event(self, name: str) -> EventCount | None:
        return next((e for e in self.events if e.name == name), None)

    def value(self, name: str) -> float | None:
        found = self.event(name)
        return found.value if found is not None else None

    def per_op(self, name: str) -> float | None:
        value = self.value(name)
        if value is None or not self.operations:
            return None
        return value / self.operations

    def derived(self) -> dict[str, tuple[float | None, str, str]]:
        """name -> (value or None when an input is missing, unit, direction)."""
        found: dict[str, tuple[float | None, str, str]] = {}
        for name, top, bottom, scale, unit, direction in DERIVED:
            numerator, denominator = self.value(top), self.value(bottom)
            ratio = scale * numerator / denominator if numerator is not None and denominator else None
            found[name] = (ratio, unit, direction)
        return found

    @property
    def hardware_supported(self) -> bool:
        return any(e.supported for e in self.events if e.name in HARDWARE_EVENTS)

    def to_json(self) -> dict[str, Any]:
        """``{"task-clock": {value, unit, per_op, ...}, "cycles": {"supported": false, "reason"}, "ipc": ...}``."""
        data: dict[str, Any] = {}
        for event in self.events:
            if not event.supported:
                data[event.name] = {"supported": False, "reason": event.reason}
                continue
            value = event.value
            entry: dict[str, Any] = {"supported": True, "value": value, "unit": event.unit,
                                     "per_op": self.per_op(event.name),
                                     "per_op_unit": per_op_unit(event.unit),
                                     "running_pct": _rounded(event.running_pct), "multiplexed": event.multiplexed}
            if value is None:
                entry["reason"] = event.reason or "enabled but never scheduled on a counter (not counted)"
            data[event.name] = entry
        for name, (ratio, unit, _) in self.derived().items():
            data[name] = ({"supported": True, "derived": True, "value": ratio, "unit": unit} if ratio is not None
                          else {"supported": False, "derived": True,
                                "reason": "needs " + " and ".join(_inputs(name)) + " counted"})
        return data

    def context_json(self) -> dict[str, Any]:
        """How the counters were taken (``counters_context`` beside ``counters``)."""
        return {"source": self.source, "scope": self.scope, "operations": self.operations,
                "operation": self.operation,
                "multiplexed": [e.name for e in self.events if e.multiplexed],
                "hardware_events": self.hardware_supported}

    def metric_values(self) -> dict[str, tuple[float, str, str]]:
        """Per-operation figures a comparison judges: ``event`` / ``derived`` -> (value, unit, direction).

        Events counted with a value (per operation when the operations are known, else
        the total) and the derived ratios that could be computed."""
        found: dict[str, tuple[float, str, str]] = {}
        for event in self.events:
            value = self.per_op(event.name) if self.operations else event.value
            if value is not None:
                unit = per_op_unit(event.unit) if self.operations else event.unit
                found[event.name] = (value, "ns" if event.unit == "ns" else unit, "lower")
        for name, (ratio, unit, direction) in self.derived().items():
            if ratio is not None:
                found[name] = (ratio, unit, direction)
        return found


def per_op_unit(unit: str) -> str:
    return "ns/op" if unit == "ns" else "/op"


def _inputs(name: str) -> tuple[str, str]:
    for derived, top, bottom, *_ in DERIVED:
        if derived == name:
            return top, bottom
    raise KeyError(name)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def unsupported_reason(event: Mapping[str, Any]) -> str:
    """Why an event was not counted, in words (its errno when the counter said one)."""
    code = event.get("errno")
    if isinstance(code, int) and code:
        name = errno_codes.errorcode.get(code, str(code))
        why = _WHY_UNSUPPORTED.get(code, str(event.get("error") or "refused by the kernel"))
        return f"{why} ({name})"
    return str(event.get("error") or "not supported here")


def operations_of(header: Mapping[str, Any]) -> float | None:
    """The operations the counters cover: their own ``operations``, else n x batch of the run."""
    raw = header.get("counters") or {}
    given = raw.get("operations")
    if given is not None:
        return float(given) or None
    n = header.get("n")
    if not n:
        return None
    return float(n) * float(header.get("batch") or 1)


def parse_counters(header: Mapping[str, Any]) -> Counters | None:
    """The run's counters (None when it counted none)."""
    raw = header.get("counters")
    if not isinstance(raw, Mapping) or not isinstance(raw.get("events"), Sequence):
        return None
    events = []
    for item in raw["events"]:
        if not isinstance(item, Mapping) or not item.get("name"):
            continue
        name = str(item["name"])
        if not item.get("supported", True):
            events.append(EventCount(name, False, str(item.get("unit") or _unit(name)),
                                     reason=unsupported_reason(item)))
            continue
        events.append(EventCount(
            name, True, str(item.get("unit") or _unit(name)), raw=_number(item.get("value")),
            enabled_ns=_number(item.get("enabled_ns")), running_ns=_number(item.get("running_ns")),
            reason=None if item.get("value") is not None else str(item.get("error") or "not counted"),
        ))
    return Counters(str(raw.get("source") or "unknown"), str(raw.get("scope") or "unknown"), tuple(events),
                    operations_of(header), str(raw.get("operation") or "op"))


def _unit(name: str) -> str:
    return "ns" if name == "task-clock" else "count"


def _number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def sum_raw(readings: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Raw ``counters`` objects of several measured regions (one side's slots) as one:
    values, enabled and running times and operations added event by event; an event
    unsupported in any of them is unsupported in the sum. None for no readings."""
    readings = [r for r in readings if isinstance(r, Mapping) and r.get("events")]
    if not readings:
        return None
    first = readings[0]
    events: list[dict[str, Any]] = []
    for index, item in enumerate(first["events"]):
        parts = [r["events"][index] for r in readings if index < len(r["events"])]
        if len(parts) != len(readings) or any(p.get("name") != item.get("name") for p in parts):
            continue
        if not all(p.get("supported", True) for p in parts):
            events.append(next(dict(p) for p in parts if not p.get("supported", True)))
            continue
        summed = dict(item)
        for key in ("value", "enabled_ns", "running_ns"):
            values = [p.get(key) for p in parts]
            summed[key] = None if any(v is None for v in values) else sum(float(v) for v in values)
        events.append(summed)
    total: dict[str, Any] = {k: v for k, v in first.items() if k not in ("events", "operations", "per_slot")}
    total["events"] = events
    operations = [r.get("operations") for r in readings]
    if all(o is not None for o in operations):
        total["operations"] = sum(float(o) for o in operations if o is not None)
    return total


def counter_lines(counters: Counters, *, wall_ns: float | None = None) -> list[str]:
    """The text ``run`` and ``show`` print under "perf counters" (unsupported events with
    the same reason on one line)."""
    lines = []
    unsupported: dict[str, list[str]] = {}
    for event in counters.events:
        if not event.supported:
            unsupported.setdefault(event.reason or "not supported", []).append(event.name)
            continue
        value = event.value
        if value is None:
            lines.append(f"{event.name:<18} not counted ({event.reason or 'never scheduled'})")
            continue
        per_op = counters.per_op(event.name)
        text = f"{event.name:<18} {_format(value, event.unit):>14}"
        if per_op is not None:
            text += f"  {_format(per_op, event.unit):>12} per {counters.operation}"
        if event.name == "task-clock" and wall_ns:
            text += f"  ({value / wall_ns:.3f} CPUs utilized)"
        if event.multiplexed:
            text += f"  [counted {event.running_pct:.1f}% of the time, scaled]"
        lines.append(text)
    for name, (ratio, unit, _) in counters.derived().items():
        if ratio is not None:
            lines.append(f"{name:<18} {ratio:>14.4g} {unit}")
    for reason, names in unsupported.items():
        lines.append(f"not supported: {', '.join(names)}: {reason}")
    return lines


def _format(value: float, unit: str) -> str:
    if unit == "ns":
        for scale, name in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
            if abs(value) >= scale:
                return f"{value / scale:.4g} {name}"
        return f"{value:.4g} ns"
    if abs(value) >= 1e6 or float(value).is_integer():
        return f"{value:,.0f}"
    return f"{value:.4g}"


def counters_json(header: Mapping[str, Any]) -> dict[str, Any]:
    """The keys ``run --json`` and ``show --json`` add for a run that counted: ``counters``
    and ``counters_context`` (nothing for a run that did not)."""
    counters = parse_counters(header)
    if counters is None:
        return {}
    return {"counters": counters.to_json(), "counters_context": counters.context_json()}


def counter_metric(primary_metric: str, figure: str) -> str:
    """``syscall.getppid.latency``, ``cycles`` -> ``syscall.getppid.perf-stat.cycles``."""
    base = primary_metric.rsplit(".", 1)[0] if "." in primary_metric else primary_metric
    return f"{base}.{METRIC_GROUP}.{figure}"


def is_counter_metric(name: str) -> bool:
    return f".{METRIC_GROUP}." in name


def counter_metric_values(header: Mapping[str, Any], primary_metric: str) -> dict[str, tuple[float, str, str]]:
    """The run's counter figures as metrics: full name -> (value, unit, direction); empty
    when it counted nothing."""
    counters = parse_counters(header)
    if counters is None:
        return {}
    return {counter_metric(primary_metric, figure): found for figure, found in counters.metric_values().items()}


def counter_series(header: Mapping[str, Any], primary_metric: str) -> list[MetricSeries]:
    """The run's counter figures as one-value metric series (a trial's statistic is that value)."""
    import numpy as np

    return [MetricSeries(name, unit, direction, np.array([value], dtype=np.float64))
            for name, (value, unit, direction) in counter_metric_values(header, primary_metric).items()]


def judgeable(*sides: Sequence[float]) -> bool:
    """True when every value is finite and positive: a ratio of them means something. A count
    of rare events (migrations, switches of a short slot) is often 0, and is then shown but not
    judged."""
    return all(len(side) > 0 and all(math.isfinite(v) and v > 0 for v in side) for side in sides)


def unjudged_note(names: Sequence[str]) -> str:
    """Why counter metrics ``names`` have no verdict (``judgeable`` said no)."""
    figures = ", ".join(name.split(f".{METRIC_GROUP}.", 1)[-1] for name in names)
    return f"{figures}: zero (or not counted) in some trials or slots, so no ratio can be judged"
