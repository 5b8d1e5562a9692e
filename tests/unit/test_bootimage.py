"""Decompressing a bzImage's payload and finding the PVH note, on images built here byte by byte."""

from __future__ import annotations

import bz2
import gzip
import lzma
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from kbench.targets.vm.bootimage import (
    _decompress,
    _payload,
    boot_image,
    has_pvh_note,
    image_damage,
    payload_damage,
)


def pvh_elf(with_note: bool = True) -> bytes:
    """An ELF64 header, one PT_NOTE program header and a Xen PHYS32_ENTRY note (or another note)."""
    note = struct.pack("<III", 4, 4, 18 if with_note else 17) + b"Xen\0" + struct.pack("<I", 0x1000000)
    phoff, note_off = 64, 64 + 56
    header = bytearray(64)
    header[:5] = b"\x7fELF\x02"
    struct.pack_into("<Q", header, 0x20, phoff)
    struct.pack_into("<HH", header, 0x36, 56, 1)
    program = struct.pack("<IIQQQQQQ", 4, 0, note_off, 0, 0, len(note), len(note), 4)
    return bytes(header) + program + note + bytes(4096)


def bzimage(payload: bytes) -> bytes:
    """A setup header (version 2.08, 4 setup sectors) whose payload is ``payload``."""
    setup = bytearray(5 * 512)
    setup[0x1F1] = 4
    setup[0x202:0x206] = b"HdrS"
    struct.pack_into("<H", setup, 0x206, 0x208)
    struct.pack_into("<II", setup, 0x248, 0, len(payload))
    return bytes(setup) + payload


COMPRESSORS: dict[str, Callable[[bytes], bytes]] = {
    "xz": lambda data: lzma.compress(data, format=lzma.FORMAT_XZ),
    "gzip": gzip.compress,
    "bzip2": bz2.compress,
    "lzma": lambda data: lzma.compress(data, format=lzma.FORMAT_ALONE),
}


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_a_whole_payload_decompresses_and_a_cut_one_does_not(name: str) -> None:
    elf = pvh_elf()
    packed = COMPRESSORS[name](elf)
    payload = _payload(bzimage(packed))
    assert payload == packed and _decompress(payload) == elf
    assert _decompress(packed[: len(packed) // 2]) is None  # a truncated image is not a kernel


def test_the_pvh_note_is_found_and_broken_elves_are_not_errors() -> None:
    elf = pvh_elf()
    assert has_pvh_note(elf) and not has_pvh_note(pvh_elf(with_note=False))
    assert not has_pvh_note(elf[:100])  # program header cut off: False, not struct.error
    assert not has_pvh_note(b"\x7fELF\x02")
    assert not has_pvh_note(b"not an elf at all")


def test_boot_image_falls_back_to_the_bzimage_when_the_payload_is_cut(tmp_path: Path) -> None:
    whole = tmp_path / "whole.bzImage"
    whole.write_bytes(bzimage(lzma.compress(pvh_elf())))
    assert boot_image(whole, tmp_path / "cache").read_bytes() == pvh_elf()
    cut = tmp_path / "cut.bzImage"
    cut.write_bytes(whole.read_bytes()[:-200])
    assert boot_image(cut, tmp_path / "cache") == cut  # qemu gets the bzImage and says what it thinks of it


def with_crc(image: bytes) -> bytes:
    """The image with the CRC32 trailer the kernel's build appends (zlib's CRC, not inverted back)."""
    return image + struct.pack("<I", zlib.crc32(image) ^ 0xFFFFFFFF)


@pytest.mark.parametrize("name", sorted(COMPRESSORS))
def test_a_damaged_payload_or_crc_is_named_and_a_whole_image_is_not(name: str, tmp_path: Path) -> None:
    packed = COMPRESSORS[name](pvh_elf())
    good = with_crc(bzimage(packed))
    assert payload_damage(good) is None
    (tmp_path / "good").write_bytes(good)
    assert image_damage(tmp_path / "good") is None
    cut = bytearray(good)
    cut[-len(packed) // 2 - 4 : -4] = bytes(len(packed) // 2)  # the payload's second half zeroed
    assert payload_damage(bytes(cut)) == f"its {name} payload does not decompress"
    (tmp_path / "cut").write_bytes(cut)
    assert image_damage(tmp_path / "cut") == (f"its {name} payload does not decompress and its CRC32 does not "
                                              "match the one it carries")
    setup_hit = bytearray(good)
    setup_hit[0x300] ^= 0xFF  # setup code, not the payload: only the CRC tells
    (tmp_path / "setup").write_bytes(setup_hit)
    assert image_damage(tmp_path / "setup") == "its CRC32 does not match the one it carries"
    (tmp_path / "text").write_text("not a kernel")
    assert image_damage(tmp_path / "text") == "it is not a bzImage (no 'HdrS' boot header)"
