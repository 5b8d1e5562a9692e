"""Wire format between the host and kbench-agent (native/agent/agent.c).

    frame = u32 body_length (little-endian) + body
    body  = u8 kind + field*
    field = u8 tag + u32 length (LE) + bytes

Integers are i64 little-endian in an 8-byte field. One request, one reply
(``RESULT``); the agent speaks first with ``HELLO``. The one exception: while an
``EXEC`` runs, the host may send ``SIGNAL`` (tag SIGNAL = the signal number), which the
agent delivers to the command's process group without replying; the ``EXEC``'s own
``RESULT`` follows when the command ends. A ``SIGNAL`` that arrives after the command
ended is dropped. An ``EXEC`` with a ``FOLLOW`` path gets ``OUTPUT`` frames before its
``RESULT``: the bytes appended to that guest file since the last one (``DATA``), read
every FOLLOW_PERIOD_MS while the command runs and once after it ended.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum

MAX_FRAME = 1 << 30


class Kind(IntEnum):
    HELLO = 0x01
    EXEC = 0x10
    READ_FILE = 0x11
    WRITE_FILE = 0x12
    POWEROFF = 0x13
    PING = 0x14
    SIGNAL = 0x15  # during an EXEC: deliver a signal to the command's process group; no reply
    RESULT = 0x20
    OUTPUT = 0x21  # during an EXEC with FOLLOW: bytes appended to the followed file (DATA), in order


class Tag(IntEnum):
    ARG = 1
    STDIN = 2
    TIMEOUT_MS = 3
    UID = 4
    GID = 5
    CWD = 6
    ENV = 7
    PATH = 8
    DATA = 9
    MODE = 10
    RC = 20
    STDOUT = 21
    STDERR = 22
    TIMED_OUT = 23
    ERROR = 24
    SIGNAL = 25
    FOLLOW = 26
    VERSION = 30
    RELEASE = 31
    UPTIME_MS = 32


@dataclass
class Message:
    kind: int
    fields: list[tuple[int, bytes]] = field(default_factory=list)

    def add(self, tag: Tag, value: bytes | str | int) -> Message:
        if isinstance(value, int):  # bool included
            data = struct.pack("<q", int(value))
        elif isinstance(value, str):
            data = value.encode()
        else:
            data = bytes(value)
        self.fields.append((int(tag), data))
        return self

    def get(self, tag: Tag) -> bytes | None:
        for t, v in self.fields:
            if t == tag:
                return v
        return None

    def get_all(self, tag: Tag) -> list[bytes]:
        return [v for t, v in self.fields if t == tag]

    def get_int(self, tag: Tag, default: int) -> int:
        v = self.get(tag)
        if v is None:
            return default
        return int.from_bytes(v[:8].ljust(8, b"\0"), "little", signed=True)

    def get_str(self, tag: Tag, default: str | None = None) -> str | None:
        v = self.get(tag)
        return default if v is None else v.decode("utf-8", "replace")

    def encode(self) -> bytes:
        parts = [bytes([self.kind])]
        for tag, data in self.fields:
            parts.append(struct.pack("<BI", tag, len(data)))
            parts.append(data)
        body = b"".join(parts)
        if len(body) > MAX_FRAME:
            raise ValueError(f"message of {len(body)} bytes exceeds the {MAX_FRAME}-byte frame limit")
        return struct.pack("<I", len(body)) + body


def decode_body(body: bytes | memoryview) -> Message:
    """Parse a frame body (without its length prefix)."""
    body = memoryview(body)
    if len(body) < 1:
        raise ValueError("empty frame")
    msg = Message(kind=body[0])
    off = 1
    n = len(body)
    while off < n:
        if n - off < 5:
            raise ValueError("truncated field header")
        tag, length = struct.unpack_from("<BI", body, off)
        off += 5
        if n - off < length:
            raise ValueError("truncated field")
        msg.fields.append((tag, bytes(body[off : off + length])))
        off += length
    return msg
