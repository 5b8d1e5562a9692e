"""The GNU build ID of an ELF file (a kernel's ``vmlinux``): the linker's hash of its content,
which the running kernel also shows in /sys/kernel/notes."""

from __future__ import annotations

import struct
from pathlib import Path

_PT_NOTE = 4
_NT_GNU_BUILD_ID = 3


def gnu_build_id(path: Path) -> str | None:
    """The build ID as hex, or None when the file is not ELF64 or has none."""
    try:
        with open(path, "rb") as f:
            header = f.read(64)
            if len(header) < 64 or header[:4] != b"\x7fELF" or header[4] != 2 or header[5] != 1:
                return None
            phoff, = struct.unpack_from("<Q", header, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", header, 0x36)
            f.seek(phoff)
            table = f.read(phentsize * phnum)
            for i in range(phnum):
                kind, _flags, offset, _vaddr, _paddr, size = struct.unpack_from("<IIQQQQ", table, i * phentsize)
                if kind != _PT_NOTE:
                    continue
                f.seek(offset)
                found = _build_id_in(f.read(size))
                if found is not None:
                    return found
    except OSError:
        return None
    return None


def _build_id_in(notes: bytes) -> str | None:
    position = 0
    while position + 12 <= len(notes):
        name_size, desc_size, kind = struct.unpack_from("<III", notes, position)
        position += 12
        name = notes[position:position + name_size]
        position += (name_size + 3) & ~3
        desc = notes[position:position + desc_size]
        position += (desc_size + 3) & ~3
        if kind == _NT_GNU_BUILD_ID and name.rstrip(b"\0") == b"GNU":
            return desc.hex()
    return None
