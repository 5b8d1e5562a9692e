"""Faster booting under TCG: boot the uncompressed vmlinux through PVH.

Decompressing an xz bzImage in the emulated guest takes about 3 s under TCG. When the
kernel has CONFIG_PVH (Debian's have), qemu can load the uncompressed ELF ``vmlinux``
directly (``-kernel vmlinux``), entering at the PVH entry point: the payload is
decompressed once on the host (Python's lzma/gzip/bz2), and cached.
"""

from __future__ import annotations

import bz2
import lzma
import os
import shutil
import struct
import zlib
from pathlib import Path
from typing import Protocol

from kbench import children
from kbench.cachefiles import Hasher, locked

_XEN_ELFNOTE_PHYS32_ENTRY = 18


def _payload(image: bytes) -> bytes | None:
    if len(image) < 0x250 or image[0x202:0x206] != b"HdrS":
        return None
    (version,) = struct.unpack_from("<H", image, 0x206)
    if version < 0x208:
        return None
    setup_sects = image[0x1F1] or 4
    offset, length = struct.unpack_from("<II", image, 0x248)
    start = (setup_sects + 1) * 512 + offset
    return image[start : start + length]


class _Decompressor(Protocol):
    @property
    def eof(self) -> bool: ...

    def decompress(self, data: bytes, /) -> bytes: ...


def _complete(decompressor: _Decompressor, payload: bytes) -> bytes | None:
    """The whole stream, or None when it is cut short (a truncated image)."""
    data = decompressor.decompress(payload)
    return data if decompressor.eof else None


def _decompress(payload: bytes) -> bytes | None:
    try:
        if payload[:6] == b"\xfd7zXZ\x00":
            return _complete(lzma.LZMADecompressor(format=lzma.FORMAT_XZ), payload)
        if payload[:2] == b"\x1f\x8b":
            return _complete(zlib.decompressobj(wbits=31), payload)  # stops at the trailing size
        if payload[:3] == b"BZh":
            return _complete(bz2.BZ2Decompressor(), payload)
        if payload[:3] == b"\x5d\x00\x00":
            return _complete(lzma.LZMADecompressor(format=lzma.FORMAT_ALONE), payload)
        if payload[:4] == b"\x28\xb5\x2f\xfd" and shutil.which("zstd"):
            # the kernel appends the uncompressed size (4 bytes) and uses a large window
            proc = children.run(["zstd", "-dc", "--memory=2048MB"], input=payload[:-4], capture_output=True)
            return proc.stdout if proc.returncode == 0 else None
    except (lzma.LZMAError, zlib.error, OSError, EOFError, ValueError):
        return None
    return None


def has_pvh_note(elf: bytes) -> bool:
    """True if an ELF64 image carries the Xen PVH entry note (qemu can boot it directly);
    False for anything else, a cut-off or corrupt ELF included."""
    try:
        return _pvh_note(elf)
    except struct.error:
        return False


def _pvh_note(elf: bytes) -> bool:
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        return False
    (phoff,) = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    for i in range(phnum):
        p_type, _flags, p_offset, _va, _pa, p_filesz = struct.unpack_from("<IIQQQQ", elf, phoff + i * phentsize)
        if p_type != 4:  # PT_NOTE
            continue
        off, end = p_offset, p_offset + p_filesz
        while off + 12 <= end:
            namesz, descsz, ntype = struct.unpack_from("<III", elf, off)
            name = elf[off + 12 : off + 12 + namesz].rstrip(b"\0")
            if name == b"Xen" and ntype == _XEN_ELFNOTE_PHYS32_ENTRY:
                return True
            off += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    return False


def boot_image_cache(vmlinuz: Path, cache_dir: Path) -> tuple[Path, Path]:
    """(the cached PVH vmlinux, the marker saying there is none) of ``vmlinuz``, by content: what
    ``boot_image`` leaves in the cache (tens of MB for one kernel)."""
    h = Hasher("kbench-pvh-v2")
    h.add_file("vmlinuz", vmlinuz)
    key = h.hexdigest()
    return cache_dir / "vmlinux" / f"{key}.elf", cache_dir / "vmlinux" / f"{key}.no-pvh"


def boot_image(vmlinuz: Path, cache_dir: Path) -> Path:
    """The fastest image qemu can boot for ``vmlinuz``: a cached PVH vmlinux, else vmlinuz."""
    if os.environ.get("KBENCH_VM_NO_PVH"):
        return vmlinuz
    out, no = boot_image_cache(vmlinuz, cache_dir)
    key = out.stem
    if out.is_file():
        return out
    if no.is_file():
        return vmlinuz
    with locked(cache_dir / "vmlinux" / f"{key}.lock"):
        if out.is_file():
            return out
        payload = _payload(vmlinuz.read_bytes())
        elf = _decompress(payload) if payload else None
        if elf is None or not has_pvh_note(elf):
            no.write_text("the bzImage payload is not a PVH-capable ELF; booting the bzImage\n")
            return vmlinuz
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        tmp.write_bytes(elf)
        tmp.rename(out)
    return out


def image_damage(vmlinuz: Path) -> str | None:
    """Why a bzImage looks damaged, or None: ``payload_damage``, or the CRC32 the kernel's build
    appends does not match its bytes (an image signed afterwards may differ there)."""
    try:
        image = vmlinuz.read_bytes()
    except OSError as exc:
        return f"it cannot be read ({exc.strerror})"
    if len(image) < 0x250 or image[0x202:0x206] != b"HdrS":
        return "it is not a bzImage (no 'HdrS' boot header)"
    found = [payload_damage(image) or ""]
    if zlib.crc32(image[:-4]) ^ 0xFFFFFFFF != int.from_bytes(image[-4:], "little"):
        found.append("its CRC32 does not match the one it carries")
    return " and ".join(part for part in found if part) or None


def payload_damage(image: bytes) -> str | None:
    """'its xz payload does not decompress' (or gzip, bzip2, lzma) when a bzImage's compressed
    kernel is of a format decompressed here and fails: the guest's decompressor would fail
    too, before its console is up. None otherwise (zstd, lz4 and lzo are not checked)."""
    payload = _payload(image)
    kind = _payload_format(payload) if payload else None
    if payload is not None and kind is not None and _decompress(payload) is None:
        return f"its {kind} payload does not decompress"
    return None


def _payload_format(payload: bytes) -> str | None:
    for magic, name in ((b"\xfd7zXZ\x00", "xz"), (b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"),
                        (b"\x5d\x00\x00", "lzma")):
        if payload.startswith(magic):
            return name
    return None
