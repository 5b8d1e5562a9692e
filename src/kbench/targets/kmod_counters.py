"""kbench.ko's perf event counts (``counter_values``) as a run's ``counters`` object.

The module counts with the kernel's perf_event API on its measuring kthread, around the
recorded loop (docs/sysfs-ABI.md); this turns its lines into the raw ``counters`` object
every counting method writes into a run's header (``kbench.profile.counters``), so a
kfunc run's counters are read, shown, stored and compared like the probe's.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from kbench.targets.key_values import parse_key_values

SOURCE = "perf_event_create_kernel_counter"
SCOPE = "kernel (the measuring kthread)"
WINDOW = "recorded loop"


def event_entry(fields: dict[str, str]) -> dict[str, Any]:
    """One event line's fields as an event of the ``counters`` object."""
    entry: dict[str, Any] = {"name": fields["event"], "type": fields.get("type", "software"),
                             "unit": fields.get("unit", "count")}
    if fields.get("supported") == "1":
        entry.update(supported=True, value=int(fields["value"]), enabled_ns=int(fields["enabled_ns"]),
                     running_ns=int(fields["running_ns"]))
    else:
        code = int(fields.get("errno", "0"))
        entry.update(supported=False, errno=code, error=os.strerror(code) if code else "not supported")
    return entry


def counters_object(event_lines: Iterable[dict[str, str]], *, window: str = WINDOW,
                    threads: int = 1) -> dict[str, Any]:
    """The raw ``counters`` object of kbench.ko's event lines (their ``event=`` fields parsed)."""
    return {"source": SOURCE, "scope": SCOPE, "inherit": False, "window": window, "threads": threads,
            "events": [event_entry(fields) for fields in event_lines]}


class CounterValuesError(ValueError):
    """``counter_values`` is not what docs/sysfs-ABI.md says."""


def parse_counter_values(text: str) -> tuple[dict[str, str], dict[str, Any] | None]:
    """``/sys/kernel/kbench/<bench>/counter_values``: (its first line's fields, the ``counters``
    object, or None when the last run did not count)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise CounterValuesError("counter_values is empty")
    head = parse_key_values(lines[0])
    if "counted" not in head:
        raise CounterValuesError(f"counter_values does not start with its run line: {lines[0]!r}")
    if head["counted"] != "1":
        return head, None
    events = [parse_key_values(line) for line in lines[1:]]
    if not events or any("event" not in fields for fields in events):
        raise CounterValuesError("counter_values has a line that is not an event")
    return head, counters_object(events, threads=int(head.get("sets", "1") or 1))
