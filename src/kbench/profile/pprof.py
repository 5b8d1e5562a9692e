"""A folded profile as pprof's profile.proto (gzip-compressed, as ``go tool pprof`` reads it), and back.

The message (github.com/google/pprof, proto/profile.proto; the field numbers are in
``_PROFILE`` and beside each message below):

- one sample per folded stack: its locations leaf first, one value, its weight, and a
  string label ``comm`` holding the stack's root frame (the process name): pprof keeps
  processes apart by label (``go tool pprof -tagroot=comm`` draws them as roots again);
- one location and one function per distinct frame name, the name as the folded text has
  it (kernel frames keep their ``_[k]`` suffix), no mapping and no address: the frames are
  symbolized already, so pprof has nothing to look up;
- ``sample_type`` and ``period_type``: ``cpu``/``nanoseconds`` for cpu-clock (a sample's
  weight is its period in ns), the event's name and ``count`` otherwise (cycles); the
  period is 10^9 / frequency for cpu-clock sampled at a known frequency, else left out;
- ``comment``: what was profiled (title, event, frequency, samples), as lines.

``read_pprof`` reads any profile.proto message (gzip-compressed or not) back into folded
stacks: the ``comm`` label as the root frame when the sample has one, then the function
names root first (a location's inlined lines innermost last), weighted by the sample's
value of ``sample_type`` index ``value_index`` (default: the last one, as pprof does).
"""

from __future__ import annotations

import gzip
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from kbench.profile.folded import FoldedProfile
from kbench.profile.protowire import (
    LENGTH_DELIMITED,
    WireError,
    bytes_field,
    fields,
    int_field,
    packed_field,
    repeated_ints,
    signed,
)

COMM_LABEL = "comm"
GZIP_MAGIC = b"\x1f\x8b"

# Profile
_SAMPLE_TYPE, _SAMPLE, _LOCATION, _FUNCTION, _STRINGS = 1, 2, 4, 5, 6
_TIME_NANOS, _PERIOD_TYPE, _PERIOD, _COMMENT, _DEFAULT_SAMPLE_TYPE = 9, 11, 12, 13, 14
# ValueType: type 1, unit 2 (string indices). Sample: location_id 1, value 2, label 3.
# Label: key 1, str 2. Location: id 1, line 4. Line: function_id 1. Function: id 1, name 2, system_name 3.


class PprofError(ValueError):
    """Bytes that are not a pprof profile."""


def sample_type(event: str) -> tuple[str, str]:
    """(type, unit) of a sample's value for a profile of ``event``."""
    return ("cpu", "nanoseconds") if event == "cpu-clock" else (event or "samples", "count")


class _Strings:
    def __init__(self) -> None:
        self.table: list[str] = [""]
        self._index: dict[str, int] = {"": 0}

    def __call__(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.table)
            self.table.append(text)
        return found


def to_pprof(profile: FoldedProfile, *, comments: Sequence[str] = (), time_nanos: int = 0) -> bytes:
    """``profile`` as a gzip-compressed profile.proto message (module docstring)."""
    strings = _Strings()
    kind, unit = sample_type(profile.event)
    value_type = int_field(1, strings(kind)) + int_field(2, strings(unit))
    functions: dict[str, int] = {}
    samples = []
    for stack, weight in sorted(profile.stacks.items()):
        comm, *frames = stack.split(";")
        ids = [functions.setdefault(frame, len(functions) + 1) for frame in reversed(frames)]
        label = int_field(1, strings(COMM_LABEL)) + int_field(2, strings(comm))
        samples.append(packed_field(1, ids) + packed_field(2, [weight]) + bytes_field(3, label))
    body = bytearray(bytes_field(_SAMPLE_TYPE, value_type))
    for sample in samples:
        body += bytes_field(_SAMPLE, sample)
    for ident in functions.values():  # a location per function: id n holds function n
        body += bytes_field(_LOCATION, int_field(1, ident) + bytes_field(4, int_field(1, ident)))
    for name, ident in functions.items():
        index = strings(name)
        body += bytes_field(_FUNCTION, int_field(1, ident) + int_field(2, index) + int_field(3, index))
    comment_ids = [strings(line) for line in comments]
    body += int_field(_TIME_NANOS, time_nanos)
    body += bytes_field(_PERIOD_TYPE, value_type)
    if profile.event == "cpu-clock" and profile.frequency_hz:
        body += int_field(_PERIOD, round(1e9 / profile.frequency_hz))
    body += packed_field(_COMMENT, comment_ids)
    body += int_field(_DEFAULT_SAMPLE_TYPE, strings(kind))
    for text in strings.table:  # written last: every string above is in it by now
        body += bytes_field(_STRINGS, text.encode())
    return gzip.compress(bytes(body), mtime=0)


@dataclass
class PprofProfile:
    """What ``read_pprof`` found: folded stacks and the profile's own description."""

    stacks: dict[str, int]
    sample_types: list[tuple[str, str]]
    period_type: tuple[str, str] | None = None
    period: int = 0
    comments: list[str] = field(default_factory=list)


def read_pprof(data: bytes, value_index: int = -1) -> PprofProfile:
    """A profile.proto message (gzip-compressed or not) as folded stacks (module docstring)."""
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise PprofError(f"not a pprof profile: {exc}") from None
    try:
        return _read(data, value_index)
    except (WireError, UnicodeDecodeError, IndexError, KeyError) as exc:
        raise PprofError(f"not a pprof profile: {exc}") from None


def _read(data: bytes, value_index: int) -> PprofProfile:
    strings: list[str] = []
    raw_types: list[tuple[int, int]] = []
    raw_samples: list[tuple[list[int], list[int], list[tuple[int, int]]]] = []
    locations: dict[int, tuple[list[int], int]] = {}
    functions: dict[int, int] = {}
    period_type: tuple[int, int] | None = None
    period = 0
    comments: list[int] = []
    for number, wire_type, value in fields(data):
        if number == _STRINGS and isinstance(value, bytes):
            strings.append(value.decode())
        elif number in (_SAMPLE_TYPE, _PERIOD_TYPE) and isinstance(value, bytes):
            pair = _value_type(value)
            if number == _SAMPLE_TYPE:
                raw_types.append(pair)
            else:
                period_type = pair
        elif number == _SAMPLE and isinstance(value, bytes):
            raw_samples.append(_sample(value))
        elif number == _LOCATION and isinstance(value, bytes):
            ident, lines, address = _location(value)
            locations[ident] = (lines, address)
        elif number == _FUNCTION and isinstance(value, bytes):
            ident, name = _function(value)
            functions[ident] = name
        elif number == _PERIOD and wire_type != LENGTH_DELIMITED:
            assert isinstance(value, int)
            period = signed(value)
        elif number == _COMMENT:
            comments += repeated_ints(wire_type, value)
    if not raw_types:
        raise PprofError("not a pprof profile: it has no sample_type")
    if strings[:1] != [""]:
        raise PprofError("not a pprof profile: string_table[0] must be empty")
    stacks: Counter[str] = Counter()
    for location_ids, values, labels in raw_samples:
        if len(values) != len(raw_types):
            raise PprofError(f"a sample has {len(values)} values for {len(raw_types)} sample types")
        frames = [name for ident in reversed(location_ids) for name in _names(locations[ident], functions, strings)]
        comm = next((strings[text] for key, text in labels if strings[key] == COMM_LABEL), None)
        stack = ";".join(([comm] if comm is not None else []) + frames)
        stacks[stack] += signed(values[value_index])
    return PprofProfile(
        stacks=dict(stacks), sample_types=[(strings[t], strings[u]) for t, u in raw_types],
        period_type=(strings[period_type[0]], strings[period_type[1]]) if period_type else None, period=period,
        comments=[strings[i] for i in comments],
    )


def _names(location: tuple[list[int], int], functions: dict[int, int], strings: list[str]) -> list[str]:
    """A location's frames, caller first: its lines' functions, or its address when it has none."""
    lines, address = location
    return [strings[functions[f]] for f in reversed(lines)] if lines else [f"0x{address:x}"]


def _varints(data: bytes) -> dict[int, int]:
    """A message's varint fields (the last occurrence of each), by field number."""
    return {number: value for number, _, value in fields(data) if isinstance(value, int)}


def _value_type(data: bytes) -> tuple[int, int]:
    found = _varints(data)
    return found.get(1, 0), found.get(2, 0)


def _sample(data: bytes) -> tuple[list[int], list[int], list[tuple[int, int]]]:
    location_ids: list[int] = []
    values: list[int] = []
    labels: list[tuple[int, int]] = []
    for number, wire_type, value in fields(data):
        if number == 1:
            location_ids += repeated_ints(wire_type, value)
        elif number == 2:
            values += repeated_ints(wire_type, value)
        elif number == 3 and isinstance(value, bytes):
            label = _varints(value)
            if 2 in label:  # a string label (a numeric one has num, 3, instead)
                labels.append((label.get(1, 0), label[2]))
    return location_ids, values, labels


def _location(data: bytes) -> tuple[int, list[int], int]:
    """(id, the function ids of its lines, its address)."""
    ident = address = 0
    lines: list[int] = []
    for number, _, value in fields(data):
        if number == 1 and isinstance(value, int):
            ident = value
        elif number == 3 and isinstance(value, int):
            address = value
        elif number == 4 and isinstance(value, bytes):
            lines.append(_varints(value).get(1, 0))
    return ident, lines, address


def _function(data: bytes) -> tuple[int, int]:
    found = _varints(data)
    return found.get(1, 0), found.get(2, 0)
