"""Kernel config text (a ``.config`` or a fragment): read it, and merge fragments into a
base the way the kernel's ``scripts/kconfig/merge_config.sh`` does.

merge_config.sh's rule: the base's lines come first; for each fragment in turn, every
option it sets is removed from what was merged so far (a *redefinition* when the line
differs, which it reports), and the fragment's text is appended after an empty line. So
the last fragment that sets an option wins, and ``make olddefconfig`` then resolves the
rest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

OPTION = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
NOT_SET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")

Value = str | None
"""An option's value as written (``y``, ``m``, ``0x10``, ``"text"``); None: ``# ... is not set``."""


def option_line(line: str) -> tuple[str, Value] | None:
    """The option a line sets and its value, or None for a comment or an empty line."""
    line = line.rstrip("\r\n")
    match = OPTION.match(line)
    if match:
        return match.group(1), match.group(2)
    match = NOT_SET.match(line)
    if match:
        return match.group(1), None
    return None


def parse_config(text: str) -> dict[str, Value]:
    """Every option the text sets, in order; a later line for the same option wins."""
    values: dict[str, Value] = {}
    for line in text.splitlines():
        found = option_line(line)
        if found is not None:
            values.pop(found[0], None)
            values[found[0]] = found[1]
    return values


def is_enabled(value: Value) -> bool:
    return value is not None and value != "n"


def same_value(asked: Value, got: Value) -> bool:
    """Whether ``got`` (in a .config) is what ``asked`` wanted: ``n`` and "is not set" are one."""
    if not is_enabled(asked):
        return not is_enabled(got)
    return asked == got


def render_value(option: str, value: Value) -> str:
    """The line that sets ``option`` to ``value``."""
    return f"# {option} is not set" if value is None else f"{option}={value}"


@dataclass(frozen=True)
class Fragment:
    """A config fragment and where it came from (a path, or the name of one of kbench's own)."""

    name: str
    text: str


@dataclass(frozen=True)
class Redefinition:
    """An option a fragment sets to another value than the config merged before it."""

    option: str
    previous: str
    new: str
    fragment: str

    def __str__(self) -> str:
        return f"{self.option} redefined by {self.fragment}: {self.previous} -> {self.new}"


@dataclass(frozen=True)
class Merged:
    text: str
    redefinitions: tuple[Redefinition, ...]

    @property
    def values(self) -> dict[str, Value]:
        return parse_config(self.text)


def merge_fragments(base: str, fragments: Sequence[Fragment]) -> Merged:
    """``base`` with ``fragments`` merged in order, as ``merge_config.sh -m BASE FRAGMENTS...``
    writes it (byte for byte, for option lines and comments that do not name options)."""
    lines = base.splitlines(keepends=True)
    redefinitions: list[Redefinition] = []
    for fragment in fragments:
        own = _lines_by_option(fragment.text.splitlines(keepends=True))
        for option, new_lines in own.items():
            kept = [line for line in lines if _names(line, option)]
            if not kept:
                continue
            previous, new = _joined(kept), _joined(new_lines)
            if previous != new:
                redefinitions.append(Redefinition(option, previous, new, fragment.name))
            lines = [line for line in lines if not _names(line, option)]
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"  # the newline merge_config.sh echoes ends that line (and goes with it)
        else:
            lines.append("\n")
        lines.extend(fragment.text.splitlines(keepends=True))
    return Merged("".join(lines), tuple(redefinitions))


def _lines_by_option(lines: Sequence[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in lines:
        option = option_line(line)
        if option is not None:
            found.setdefault(option[0], []).append(line)
    return found


def _names(line: str, option: str) -> bool:
    found = option_line(line)
    return found is not None and found[0] == option


def _joined(lines: Sequence[str]) -> str:
    return " ".join(line.rstrip("\r\n") for line in lines)


def fragment_text(values: Mapping[str, Value], comments: Mapping[str, str] | None = None) -> str:
    """A fragment setting ``values`` in order; an option's comment, when given, is written before
    it unless the option before had the same one."""
    out = []
    last = None
    for option, value in values.items():
        comment = (comments or {}).get(option)
        if comment and comment != last:
            out.append(f"# {comment}\n")
        last = comment
        out.append(render_value(option, value) + "\n")
    return "".join(out)
