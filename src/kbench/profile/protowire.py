"""The protocol buffers wire format, as much of it as pprof's profile.proto needs.

A message is a sequence of fields, each a key ``field_number << 3 | wire_type`` (a varint)
and a value: wire type 0 a varint (int64, uint64, bool), type 2 a length-delimited run of
bytes (a string, an embedded message, or a packed repeated scalar: varints one after
another). Types 1 and 5 (fixed 64 and 32 bits) are skipped when read; profile.proto has
none. Negative int64 values take ten bytes (two's complement), as protobuf writes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5


class WireError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def varint(value: int) -> bytes:
    """``value`` (an int64 or uint64) as a base-128 varint."""
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def read_varint(data: bytes, at: int) -> tuple[int, int]:
    """(the unsigned value of the varint at ``at``, the offset after it)."""
    value = shift = 0
    while True:
        if at >= len(data):
            raise WireError("a varint runs past the end of the message")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift >= 70:
            raise WireError("a varint longer than ten bytes")


def signed(value: int) -> int:
    """An int64 read as unsigned, back to its sign."""
    return value - (1 << 64) if value >= 1 << 63 else value


def key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def int_field(number: int, value: int) -> bytes:
    """A varint field; nothing for 0 (proto3 leaves default values out)."""
    return key(number, VARINT) + varint(value) if value else b""


def bytes_field(number: int, value: bytes) -> bytes:
    return key(number, LENGTH_DELIMITED) + varint(len(value)) + value


def packed_field(number: int, values: Iterable[int]) -> bytes:
    """A repeated scalar field, packed (proto3's default); nothing when empty."""
    body = b"".join(varint(v) for v in values)
    return bytes_field(number, body) if body else b""


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """(field number, wire type, value) of each field: an int for varints, bytes for
    length-delimited values; fixed-width fields are skipped."""
    at = 0
    while at < len(data):
        tag, at = read_varint(data, at)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise WireError("field number 0")
        if wire_type == VARINT:
            value, at = read_varint(data, at)
            yield number, wire_type, value
        elif wire_type == LENGTH_DELIMITED:
            size, at = read_varint(data, at)
            if at + size > len(data):
                raise WireError(f"field {number}: {size} bytes announced, {len(data) - at} left")
            yield number, wire_type, data[at:at + size]
            at += size
        elif wire_type in (FIXED64, FIXED32):
            at += 8 if wire_type == FIXED64 else 4
            if at > len(data):
                raise WireError(f"field {number}: a fixed-width value runs past the end")
        else:
            raise WireError(f"field {number}: wire type {wire_type} (groups or unknown) is not read")


def repeated_ints(wire_type: int, value: int | bytes) -> list[int]:
    """A repeated scalar field's values from one occurrence, packed or not."""
    if wire_type == VARINT:
        assert isinstance(value, int)
        return [value]
    assert isinstance(value, bytes)
    found, at = [], 0
    while at < len(value):
        number, at = read_varint(value, at)
        found.append(number)
    return found
