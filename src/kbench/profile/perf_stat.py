"""``perf stat`` around a whole tool: its command line and its CSV output as a run's counters.

``perf stat -x, -o FILE -e EVENTS -- TOOL ARGS`` counts the tool and every process it
starts (perf stat inherits by default), from its exec to its exit, and writes one line
per event (perf's CSV, tools/perf/Documentation/perf-stat.txt, "CSV FORMAT"):

    counter value, unit, event, counter run time (ns), % of time it was counting,
    metric value, metric unit

``<not supported>`` (no such event, e.g. no PMU in a VM) and ``<not counted>`` (enabled,
never scheduled) take the value's place. The run time and percentage give the times
``kbench.profile.counters`` scales by, exactly as the probe's own ``running_ns`` and
``enabled_ns`` do. ``task-clock`` comes in msec and is kept in ns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kbench.profile.counters import EVENTS, HARDWARE_EVENTS

PERF_STAT_SOURCE = "perf stat"
NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"
_TO_NS = {"msec": 1e6, "usec": 1e3, "nsec": 1.0, "sec": 1e9, "ns": 1.0}


def perf_stat_argv(perf: str, output: str, command: Sequence[str], events: Iterable[str] = EVENTS) -> list[str]:
    """``perf stat`` counting ``events`` of ``command`` (and its children) into ``output`` as CSV."""
    return [perf, "stat", "-x", ",", "-o", output, "-e", ",".join(events), "--", *command]


def parse_perf_stat(text: str, *, operations: float | None = None) -> dict[str, Any]:
    """The ``counters`` object (``kbench.profile.counters``) of one ``perf stat -x,`` output.

    Events perf did not print are listed as unsupported (perf says nothing of an event it
    could not even name); an event modifier (``cycles:u``) sets the scope to ``user``.
    Raises ValueError when no event line is found (not perf stat's CSV).
    """
    found: dict[str, dict[str, Any]] = {}
    user_only = False
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 5:
            continue
        value, unit, event = fields[0].strip(), fields[1].strip(), fields[2].strip()
        name, _, modifier = event.partition(":")
        if name not in EVENTS:
            continue
        user_only = user_only or modifier == "u"
        kind = "hardware" if name in HARDWARE_EVENTS else "software"
        if value == NOT_SUPPORTED:
            found[name] = {"name": name, "type": kind, "supported": False,
                           "error": "perf stat: <not supported>" + _hint(kind)}
            continue
        entry: dict[str, Any] = {"name": name, "type": kind, "supported": True,
                                 "unit": "ns" if name == "task-clock" else "count"}
        running, percent = _float(fields[3]), _float(fields[4])
        if value == NOT_COUNTED:
            entry.update(value=None, error="perf stat: <not counted> (never scheduled on a counter)")
        else:
            number = _float(value)
            if number is None:
                continue
            entry["value"] = number * _TO_NS.get(unit, 1.0) if name == "task-clock" else number
        if running is not None and percent:
            entry.update(running_ns=running, enabled_ns=running * 100.0 / percent)
        found[name] = entry
    if not found:
        raise ValueError("no event in perf stat's output: " + (text.strip()[:200] or "(empty)"))
    events = [found.get(name) or {"name": name, "type": "hardware" if name in HARDWARE_EVENTS else "software",
                                  "supported": False, "error": "perf stat printed no line for it"}
              for name in EVENTS]
    counters: dict[str, Any] = {"source": PERF_STAT_SOURCE, "scope": "user" if user_only else "user+kernel",
                                "inherit": True, "events": events}
    if operations is not None:
        counters["operations"] = operations
    return counters


def _hint(kind: str) -> str:
    return ": no such event on this machine (no hardware PMU: typical of a VM)" if kind == "hardware" else ""


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
