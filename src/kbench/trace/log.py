"""The entries of kbench.ko's log buffer, as read from /sys/kernel/kbench/trace/log.

An entry is ``struct kbench_log_entry`` (kmod/include/kbench.h), 32 bytes, little-endian:
start (u64), cycles (u64), key (u32), data (u32), pid (u32), cpu (u16), kind (u8),
flags (u8). ``TraceLog`` keeps them raw, together with what gives them meaning (key
names, probed functions, the kernel's counters), and stores them with a run in one of
two ways:

- as the run's own sample columns (a ``kbench trace`` run, header format
  ``kbench-trace/1``), with ``ticks`` holding the cycles;
- embedded in another run's header (a kfunc run whose benchmark logged entries), as
  the same columns zlib-compressed by the store's codec and base64-encoded, because
  the store keeps sample columns of one length per run.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbench.store.codec import decode_array, encode_array

TRACE_FORMAT = "kbench-trace/1"

KIND_TRACEPOINT = 1
KIND_FUNCTION = 2
KIND_RUN = 3
KIND_SYSCALL = 4
KIND_IRQ = 5
KIND_SOFTIRQ = 6
KIND_VECTOR = 7
KIND_FAULT = 8
KIND_NAMES = {
    KIND_TRACEPOINT: "tracepoint", KIND_FUNCTION: "function", KIND_RUN: "run", KIND_SYSCALL: "syscall",
    KIND_IRQ: "irq", KIND_SOFTIRQ: "softirq", KIND_VECTOR: "vector", KIND_FAULT: "page fault",
}
ENTRY_KINDS = (KIND_SYSCALL, KIND_IRQ, KIND_SOFTIRQ, KIND_VECTOR, KIND_FAULT)
"""Kernel entries (kmod/core/entries.c, or the same from tracefs): not regions of a benchmark."""

FLAG_SWITCHED = 1
"""The task was switched out between start and stop: the cycles include time off the CPU."""
FLAG_IRQ = 2
"""Logged outside task context (interrupt, softirq, NMI)."""
FLAG_UNBOUND = 4
"""A run window of a worker that was not pinned to a CPU."""
FLAG_UNTIMED = 8
"""An entry without an exit tracepoint (a page fault): cycles is 0."""

ENTRY_DTYPE = np.dtype(
    [
        ("start", "<u8"),
        ("cycles", "<u8"),
        ("key", "<u4"),
        ("data", "<u4"),
        ("pid", "<u4"),
        ("cpu", "<u2"),
        ("kind", "u1"),
        ("flags", "u1"),
    ]
)
assert ENTRY_DTYPE.itemsize == 32

COLUMN_OF_FIELD = {
    "cycles": "ticks", "start": "start", "key": "key", "data": "data", "pid": "pid",
    "cpu": "cpu", "kind": "kind", "flags": "flags",
}
"""Sample column of each entry field; ``ticks`` (the cycles) comes first."""


class TraceLogError(ValueError):
    """The bytes or stored columns are not a whole number of log entries."""


@dataclass(frozen=True)
class TraceLog:
    """Every entry of one log, in the order kbench.ko handed them out, and their context.

    ``names``: tracepoint key -> name (KBENCH_TRACE_NAME); ``functions``: probe slot ->
    function name; ``status``: the kernel's ``trace/status`` after finalize (entries,
    overflow, invalid_keys, …) as strings.
    """

    entries: np.ndarray
    tsc_khz: int
    names: dict[int, str] = field(default_factory=dict)
    functions: dict[int, str] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.entries.dtype != ENTRY_DTYPE:
            raise TraceLogError(f"entries must have the log's dtype, not {self.entries.dtype}")

    @classmethod
    def from_bytes(cls, raw: bytes, tsc_khz: int, **context: Any) -> TraceLog:
        if len(raw) % ENTRY_DTYPE.itemsize:
            raise TraceLogError(
                f"the log holds {len(raw)} bytes, not a whole number of {ENTRY_DTYPE.itemsize}-byte entries"
            )
        return cls(np.frombuffer(raw, dtype=ENTRY_DTYPE).copy(), tsc_khz, **context)

    @property
    def n(self) -> int:
        return int(self.entries.size)

    @property
    def overflow(self) -> int:
        return int(self.status.get("overflow", 0))

    def of_kind(self, kind: int) -> np.ndarray:
        found: np.ndarray = self.entries[self.entries["kind"] == kind]
        return found

    def label(self, kind: int, key: int) -> str:
        """What a (kind, key) is called in reports: the function, or ``key 3 (name)``."""
        if kind == KIND_FUNCTION:
            return self.functions.get(key, f"function slot {key}")
        name = self.names.get(key)
        return f"key {key} ({name})" if name else f"key {key}"

    # -- as sample columns ---------------------------------------------------------

    def to_columns(self) -> dict[str, np.ndarray]:
        """One array per entry field, named as sample columns (``ticks`` = cycles)."""
        return {column: np.ascontiguousarray(self.entries[name]) for name, column in COLUMN_OF_FIELD.items()}

    @classmethod
    def from_columns(cls, columns: dict[str, np.ndarray], context: dict[str, Any]) -> TraceLog:
        lengths = {columns[column].size for column in COLUMN_OF_FIELD.values() if column in columns}
        if len(lengths) > 1:
            raise TraceLogError(f"trace columns differ in length: {sorted(lengths)}")
        n = lengths.pop() if lengths else 0
        entries = np.zeros(n, dtype=ENTRY_DTYPE)
        for name, column in COLUMN_OF_FIELD.items():
            if column not in columns:
                raise TraceLogError(f"the run has no {column!r} column of trace entries")
            entries[name] = columns[column]
        return cls(entries, **_context_from_json(context))

    def context_json(self) -> dict[str, Any]:
        """Everything but the entries, JSON-ready (keys become strings)."""
        return {
            "format": TRACE_FORMAT,
            "tsc_khz": self.tsc_khz,
            "names": {str(k): v for k, v in sorted(self.names.items())},
            "functions": {str(k): v for k, v in sorted(self.functions.items())},
            "status": dict(self.status),
        }

    # -- embedded in another run's header --------------------------------------------

    def to_embedded(self) -> dict[str, Any]:
        """The whole log as JSON: context plus every column, compressed and base64-encoded."""
        encoded = {}
        for column, values in self.to_columns().items():
            dtype, blob = encode_array(values)
            encoded[column] = {"dtype": dtype, "count": int(values.size), "data": base64.b64encode(blob).decode()}
        return {**self.context_json(), "columns": encoded}

    @classmethod
    def from_embedded(cls, data: dict[str, Any]) -> TraceLog:
        from kbench.store.codec import CODEC

        columns = {
            column: decode_array(spec["dtype"], CODEC, base64.b64decode(spec["data"]), int(spec["count"]))
            for column, spec in data.get("columns", {}).items()
        }
        return cls.from_columns(columns, data)


def _context_from_json(data: dict[str, Any]) -> dict[str, Any]:
    return {
        "tsc_khz": int(data.get("tsc_khz") or 0),
        "names": {int(k): str(v) for k, v in (data.get("names") or {}).items()},
        "functions": {int(k): str(v) for k, v in (data.get("functions") or {}).items()},
        "status": {str(k): str(v) for k, v in (data.get("status") or {}).items()},
    }


def trace_log_of(header: dict[str, Any], columns: dict[str, np.ndarray]) -> TraceLog | None:
    """The log a run stored, or None: a trace run's own columns, or one embedded in the header."""
    context = header.get("trace")
    if not isinstance(context, dict):
        return None
    if "columns" in context:
        return TraceLog.from_embedded(context)
    if header.get("format") == TRACE_FORMAT:
        return TraceLog.from_columns(columns, context)
    return None
