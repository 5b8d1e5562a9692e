"""``perf stat`` around a whole tool: its command line and its CSV output as a run's counters.

``perf stat -x, -o FILE -e EVENTS -- TOOL ARGS`` counts the tool and every process it
starts (perf stat inherits by default), from its exec to its exit, and writes one line
per event (perf's CSV, tools/perf/Documentation/perf-stat.txt, "CSV FORMAT"):

    counter value, unit, event, counter run time (ns), % of time it was counting,
    metric value, metric unit

``<not supported>`` (no such event, e.g. no PMU in a VM) and ``<not counted>`` (enabled,
never scheduled) take the value's place. perf prints a multiplexed event's count already
scaled to the whole time it was enabled (tools/lib/perf's ``perf_counts_values__scale``)
and the share of that time it ran as the percentage: the parser keeps the count as
counted (printed x percentage / 100) with ``running_ns`` and ``enabled_ns``, the form the
probe writes, so ``kbench.profile.counters`` scales it back to what perf printed.
``task-clock`` comes in msec and is kept in ns.

``perf_stat_csv`` writes a run's counters in the same layout, as ``perf stat -x,`` would
have printed them: what kbench reads from perf, it can give back to tools that read perf.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kbench.profile.counters import EVENTS, HARDWARE_EVENTS, Counters

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
            number = number * _TO_NS.get(unit, 1.0) if name == "task-clock" else number
            # perf printed the count scaled to the whole enabled time; kept as counted (the
            # share of it that ran), which Counters scales back by enabled / running
            scaled = running is not None and percent is not None and 0 < percent < 100.0
            entry["value"] = number * percent / 100.0 if scaled and percent else number
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


METRICS = {"instructions": ("ipc", "insn per cycle"), "branch-misses": ("branch-miss-rate", "of all branches"),
           "cache-misses": ("cache-miss-rate", "of all cache refs")}
"""An event's line -> the derived figure perf prints beside it (its name in Counters.derived, perf's words)."""


def perf_stat_csv(counters: Counters, comments: Sequence[str] = ()) -> str:
    """``counters`` as ``perf stat -x,`` prints them: a line per event, ``value,unit,event,run
    time (ns),percentage running,metric,metric unit``; the count scaled as perf scales it, a
    multiplexed event's percentage below 100, ``<not supported>`` and ``<not counted>`` as
    perf writes them; task-clock in msec; events counted in user space only (scope
    ``user``) carry perf's ``:u`` modifier. ``comments`` come first as ``# `` lines (perf's
    own -o file starts with one)."""
    derived = counters.derived()
    suffix = ":u" if counters.scope == "user" else ""
    lines = [f"# {text}" for text in comments]
    for event in counters.events:
        name = event.name + suffix
        value = event.value
        if not event.supported:
            lines.append(f"{NOT_SUPPORTED},,{name},0,100.00,,")
            continue
        if value is None:
            lines.append(f"{NOT_COUNTED},,{name},0,0.00,,")
            continue
        count = f"{value / 1e6:.6f},msec" if event.name == "task-clock" else f"{value:.0f},"
        running = f"{event.running_ns:.0f}" if event.running_ns is not None else ""
        percent = f"{event.running_pct:.2f}" if event.running_pct is not None else ""
        metric = ","
        if event.name in METRICS:
            key, words = METRICS[event.name]
            ratio = derived.get(key, (None, "", ""))[0]
            if ratio is not None:
                metric = f"{ratio:.2f},{words}"
        lines.append(f"{count},{name},{running},{percent},{metric}")
    return "".join(line + "\n" for line in lines)


def _hint(kind: str) -> str:
    return ": no such event on this machine (no hardware PMU: typical of a VM)" if kind == "hardware" else ""


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
