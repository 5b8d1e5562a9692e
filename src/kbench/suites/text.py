"""Small helpers for reading numbers out of a tool's human-readable report."""

from __future__ import annotations

import re

from kbench.suites.errors import SuiteParseError
from kbench.suites.model import SuiteParam

SIZE_PATTERN = r"[0-9]+[kKmMgGtT]?(i?[bB])?"
SIZE_HINT = "a size such as 4096, 4k, 1M or 2G"


def size_param(name: str, default: str, description: str) -> SuiteParam:
    """A text parameter holding a byte count with an optional k/M/G/T suffix."""
    return SuiteParam(name, "str", default, description, pattern=SIZE_PATTERN, pattern_hint=SIZE_HINT)


def find_number(pattern: str, text: str, *, tool: str, what: str) -> float:
    """The float captured by the first group of the first multi-line match of ``pattern``.

    Raises SuiteParseError naming ``tool`` and ``what`` when nothing matches.
    """
    match = re.search(pattern, text, flags=re.MULTILINE)
    if match is None:
        raise SuiteParseError(f"{tool} output has no {what} (expected a line matching {pattern!r})")
    return float(match.group(1))


def first_line(text: str) -> str:
    """The first non-blank line of ``text``, stripped (``""`` if there is none)."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


def version_in(pattern: str, output: str) -> str:
    """The first group of ``pattern`` in a tool's version output, else its first line."""
    match = re.search(pattern, output)
    return match.group(1) if match else first_line(output)


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def size_bytes(text: str) -> int:
    """Bytes of a size written as ``size_param`` accepts it (``4k`` = 4096, ``10K``, ``1MiB``, ``2G``):
    the suffixes are powers of 1024, as LKP's sizes are."""
    match = re.fullmatch(r"([0-9]+)([kKmMgGtT]?)(?:i?[bB])?", text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not {SIZE_HINT}")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).lower()]
