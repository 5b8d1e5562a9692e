"""Parse the output of ``kbench-probe run`` (docs/probe-format.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

PROBE_FORMAT = "kbench-probe/1"


class ProbeOutputError(ValueError):
    """The probe's output does not follow docs/probe-format.md."""


@dataclass(frozen=True)
class ProbeOutput:
    """A probe run: its JSON header and its raw rows (n × columns, uint64)."""

    header: dict[str, Any]
    rows: np.ndarray

    @property
    def columns(self) -> list[str]:
        return list(self.header["columns"])

    def column(self, name: str) -> np.ndarray:
        return self.rows[:, self.columns.index(name)]


def parse_probe_output(data: bytes) -> ProbeOutput:
    """Split ``data`` into the header line and the little-endian u64 rows.

    Raises ProbeOutputError when the header is missing or not JSON, the format tag is
    unknown, or the byte count does not match ``n * len(columns) * 8``.
    """
    output, end = _record_at(data, 0)
    if end != len(data):
        samples_start = data.index(b"\n") + 1
        raise ProbeOutputError(
            f"probe wrote {len(data) - samples_start} sample bytes, header promises {end - samples_start} "
            f"({output.rows.shape[0]} rows × {len(output.columns)} columns × 8)"
        )
    return output


def parse_probe_outputs(data: bytes) -> list[ProbeOutput]:
    """The runs of ``kbench-probe sequence``: records one after another, each as ``run`` writes it."""
    outputs, offset = [], 0
    while offset < len(data):
        output, offset = _record_at(data, offset)
        outputs.append(output)
    if not outputs:
        raise ProbeOutputError("probe output has no header line")
    return outputs


def _record_at(data: bytes, start: int) -> tuple[ProbeOutput, int]:
    newline = data.find(b"\n", start)
    if newline < 0:
        raise ProbeOutputError("probe output has no header line")
    try:
        header = json.loads(data[start:newline])
    except json.JSONDecodeError as exc:
        raise ProbeOutputError(f"probe header is not JSON: {exc}") from exc
    if not isinstance(header, dict) or header.get("format") != PROBE_FORMAT:
        raise ProbeOutputError(f"unknown probe output format: {header.get('format')!r}")
    columns = header.get("columns") or ["ticks"]
    n = int(header.get("n", 0))
    expected = n * len(columns) * 8
    end = newline + 1 + expected
    if end > len(data):
        raise ProbeOutputError(
            f"probe wrote {len(data) - newline - 1} sample bytes, header promises {expected} "
            f"({n} rows × {len(columns)} columns × 8)"
        )
    rows = np.frombuffer(memoryview(data)[newline + 1 : end], dtype="<u8").reshape(n, len(columns)).copy()
    return ProbeOutput(header=header, rows=rows), end
