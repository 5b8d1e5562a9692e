"""Sampled call stacks folded: ``comm;root;...;leaf WEIGHT``, one line per distinct stack.

The folded form is what flame graphs and profile deltas read, and what kbench stores
with a run (zlib-compressed text, ``FoldedProfile.encode``). It is made from ``perf
script`` output (``fold_perf_script``):

- each sample's frames are listed leaf first by perf; folded, they go root first, the
  process name (comm) as the root frame;
- a frame is its symbol; a kernel frame (``[kernel.kallsyms]`` or a module ``[name]``)
  gets the suffix ``_[k]`` (the flame graph convention), an unresolved one is named
  after its object, ``[libc.so.6]``;
- a sample weighs its period (perf's own "Overhead" weighs the same way): nanoseconds
  for cpu-clock, cycles for cycles.

Shares (``self_shares``, ``children_shares``) are fractions of the total weight:
*self* counts a symbol where it is the leaf (the CPU was in it), *children* where it
appears anywhere in the stack, once per stack (in it or in what it called), as
``perf report --children`` does.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

KERNEL_SUFFIX = "_[k]"
CODEC = "zlib"
FORMAT = "folded"

_FRAME = re.compile(r"^\s*([0-9a-fA-F]+)\s+(.*?)\s+\((.*)\)\s*$")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")


def frame_name(symbol: str, dso: str) -> str:
    """One frame's name in a folded stack (module docstring)."""
    symbol = _OFFSET.sub("", symbol.strip())
    kernel = dso == "[kernel.kallsyms]" or (dso.startswith("[") and dso.endswith("]") and dso != "[unknown]"
                                             and not dso.startswith("[vdso") and dso != "[heap]")
    if not symbol or symbol == "[unknown]":
        base = dso.rsplit("/", 1)[-1] if dso and dso != "[unknown]" else "unknown"
        symbol = base if base.startswith("[") else f"[{base}]"
    return symbol + KERNEL_SUFFIX if kernel and not symbol.endswith(KERNEL_SUFFIX) else symbol


def plain_symbol(frame: str) -> str:
    """A frame's name without the kernel suffix."""
    return frame[: -len(KERNEL_SUFFIX)] if frame.endswith(KERNEL_SUFFIX) else frame


def is_kernel(frame: str) -> bool:
    return frame.endswith(KERNEL_SUFFIX)


def fold_perf_script(text: str, keep: Callable[[str], bool] | None = None) -> tuple[dict[str, int], int]:
    """(folded stacks -> weight, number of samples) of ``perf script -F comm,period,ip,sym,dso``;
    with ``keep``, only the samples of the processes (comm) it says yes to."""
    stacks: Counter[str] = Counter()
    samples = 0
    comm: str | None = None
    period = 1
    frames: list[str] = []

    def flush() -> None:
        nonlocal samples
        if comm is not None and (keep is None or keep(comm)):
            stacks[";".join([comm.replace(";", ":"), *reversed(frames)])] += period
            samples += 1

    for line in text.splitlines():
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if line[:1] in (" ", "\t"):
            match = _FRAME.match(line)
            if match and comm is not None:
                frames.append(frame_name(match.group(2), match.group(3)).replace(";", ":"))
            continue
        flush()
        head, _, last = line.rstrip().rpartition(" ")
        if head and last.isdigit():
            comm, period = head.strip() or "?", max(int(last), 1)
        else:
            comm, period = line.strip() or "?", 1
        frames = []
    flush()
    return dict(stacks), samples


@dataclass(frozen=True)
class FoldedProfile:
    """One profile: folded stacks and what they were sampled with."""

    stacks: Mapping[str, int]
    event: str = "cpu-clock"
    frequency_hz: int | None = None
    samples: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.stacks.values())

    def encode(self) -> bytes:
        """The folded text, zlib-compressed (what the store keeps)."""
        return zlib.compress(self.folded_text().encode(), 6)

    def folded_text(self) -> str:
        return "".join(f"{stack} {weight}\n" for stack, weight in sorted(self.stacks.items()))

    @classmethod
    def decode(cls, data: bytes, **meta: Any) -> FoldedProfile:
        return cls(parse_folded(zlib.decompress(data).decode()), **meta)

    def self_shares(self) -> dict[str, float]:
        """Frame -> fraction of the weight where it is the leaf."""
        total = self.total
        found: Counter[str] = Counter()
        for stack, weight in self.stacks.items():
            found[stack.rsplit(";", 1)[-1]] += weight
        return {frame: weight / total for frame, weight in found.items()} if total else {}

    def children_shares(self) -> dict[str, float]:
        """Frame -> fraction of the weight where it is anywhere in the stack (once per stack);
        the root frames (process names) are left out."""
        total = self.total
        found: Counter[str] = Counter()
        for stack, weight in self.stacks.items():
            for frame in set(stack.split(";")[1:]):
                found[frame] += weight
        return {frame: weight / total for frame, weight in found.items()} if total else {}

    def top(self, count: int = 10) -> list[tuple[str, float, float]]:
        """The ``count`` frames with the largest self share: (frame, self, children)."""
        own, children = self.self_shares(), self.children_shares()
        ranked = sorted(own.items(), key=lambda item: (-item[1], item[0]))[:count]
        return [(frame, share, children.get(frame, share)) for frame, share in ranked]


def profile_from_row(row: Mapping[str, Any] | None) -> FoldedProfile | None:
    """A profile from the store's row (``Store.load_profile``), or None for no row."""
    if row is None:
        return None
    if row.get("format", FORMAT) != FORMAT or row.get("codec", CODEC) != CODEC:
        raise ValueError(f"a profile stored as {row.get('format')}/{row.get('codec')}, which this kbench cannot read")
    return FoldedProfile.decode(bytes(row["data"]), event=str(row["event"]), frequency_hz=row.get("frequency_hz"),
                                samples=int(row["samples"]), details=dict(row.get("details") or {}))


def parse_folded(text: str) -> dict[str, int]:
    """``stack weight`` lines -> {stack: weight} (lines that are not folded stacks are skipped)."""
    found: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, weight = line.rstrip().rpartition(" ")
        if stack and weight.isdigit():
            found[stack] += int(weight)
    return dict(found)


def merge(profiles: Iterable[FoldedProfile]) -> dict[str, int]:
    """Several profiles' stacks added up."""
    total: Counter[str] = Counter()
    for profile in profiles:
        total.update(profile.stacks)
    return dict(total)
