"""Reading a file to import without trusting it: a regular file only (a FIFO would block
and a device never end), of bounded size, and a gzip file inflated only up to a bound (a
300 KB file may inflate to gigabytes)."""

from __future__ import annotations

import os
import stat
import zlib
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20


class UnreadableFile(ValueError):
    """The file cannot be imported as it is (not regular, too big, unreadable); the message names it."""


def mebibytes(size: int) -> str:
    """``32 MiB`` for a whole number of MiB, else ``33,554,433 bytes``."""
    return f"{size >> 20:,} MiB" if size and size % (1 << 20) == 0 else f"{size:,} bytes"


def read_head(path: Path, size: int) -> bytes:
    """The first ``size`` bytes of the regular file ``path``, inflated first if it is
    gzip-compressed: enough to recognise its format."""
    data = read_bounded(path, None, read=max(size, CHUNK))
    if not data.startswith(GZIP_MAGIC):
        return data[:size]
    try:
        return zlib.decompressobj(wbits=31).decompress(data, size)
    except zlib.error as exc:
        raise UnreadableFile(f"{path}: damaged gzip data ({exc})") from exc


def read_bounded(path: Path, max_bytes: int | None, *, read: int | None = None) -> bytes:
    """The bytes of the regular file ``path``: all of them, at most ``max_bytes`` (UnreadableFile
    otherwise), or only its first ``read`` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise UnreadableFile(f"{path}: cannot read it: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"{path}: not a regular file ({_file_type(info.st_mode)}); "
                                 "kbench imports regular files only")
        if max_bytes is not None and info.st_size > max_bytes:
            raise UnreadableFile(f"{path}: {mebibytes(info.st_size)}, more than the {mebibytes(max_bytes)} "
                                 "a file of this format may have")
        try:
            data = f.read(read if read is not None else max_bytes + 1 if max_bytes is not None else -1)
        except OSError as exc:
            raise UnreadableFile(f"{path}: cannot read it: {exc.strerror or exc}") from exc
    if read is None and max_bytes is not None and len(data) > max_bytes:  # it grew while we read it
        raise UnreadableFile(f"{path}: more than the {mebibytes(max_bytes)} a file of this format may have")
    return data


def inflate_bounded(path: Path, data: bytes, max_bytes: int) -> bytes:
    """``data`` inflated if it is gzip-compressed (every member), never more than
    ``max_bytes`` of output (UnreadableFile naming the file otherwise); ``data`` as it is
    when it is not compressed."""
    if not data.startswith(GZIP_MAGIC):
        return data
    out = bytearray()
    rest = data
    try:
        while rest.startswith(GZIP_MAGIC):
            member = zlib.decompressobj(wbits=31)
            pending = rest
            while pending:
                out += member.decompress(pending, max_bytes + 1 - len(out))
                if len(out) > max_bytes:
                    raise UnreadableFile(f"{path}: inflates to more than {mebibytes(max_bytes)} (gzip); "
                                         "a file of this format may hold no more")
                pending = member.unconsumed_tail
                if member.eof:
                    break
            if not member.eof:
                raise UnreadableFile(f"{path}: the gzip data is cut short")
            rest = member.unused_data
    except zlib.error as exc:
        raise UnreadableFile(f"{path}: damaged gzip data ({exc})") from exc
    return bytes(out)


def _file_type(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"
