"""A minimal writer of ``newc`` cpio archives (the format the kernel unpacks as initramfs)."""

from __future__ import annotations

import stat
from typing import BinaryIO

_TRAILER = "TRAILER!!!"


class NewcWriter:
    """Writes entries in order; parents must be written before their children.

    Every entry gets uid/gid 0 and mtime 0, so equal content gives equal bytes.
    """

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._ino = 1
        self._pos = 0

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._pos += len(data)

    def _pad(self) -> None:
        if self._pos % 4:
            self._write(b"\0" * (4 - self._pos % 4))

    def _entry(
        self, name: str, mode: int, data: bytes = b"", *, nlink: int = 1, rdev: tuple[int, int] = (0, 0)
    ) -> None:
        name_b = name.lstrip("/").encode() + b"\0"
        fields = (
            self._ino,
            mode,
            0,
            0,
            nlink,
            0,
            len(data),
            0,
            0,
            rdev[0],
            rdev[1],
            len(name_b),
            0,
        )
        self._ino += 1
        self._write(b"070701" + "".join(f"{v:08x}" for v in fields).encode())
        self._write(name_b)
        self._pad()
        if data:
            self._write(data)
            self._pad()

    def directory(self, name: str, perm: int = 0o755) -> None:
        self._entry(name, stat.S_IFDIR | perm, nlink=2)

    def file(self, name: str, data: bytes, perm: int = 0o644) -> None:
        self._entry(name, stat.S_IFREG | perm, data)

    def symlink(self, name: str, target: str) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def char_device(self, name: str, major: int, minor: int, perm: int = 0o600) -> None:
        self._entry(name, stat.S_IFCHR | perm, rdev=(major, minor))

    def finish(self) -> None:
        self._ino = 0
        self._entry(_TRAILER, 0, nlink=1)
        if self._pos % 512:
            self._write(b"\0" * (512 - self._pos % 512))
