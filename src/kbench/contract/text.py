"""Text from outside kbench, made safe to print: control characters escaped, long values cut.

Outside text (a command line from an imported file, a label, a job file's value, a tool's
output, a path) may hold terminal escapes (``ESC[2J`` clears the screen, ``ESC]8;;``
makes a hyperlink), carriage returns that overwrite a line, NUL bytes, or characters that
reorder what follows (Unicode bidirectional controls). kbench prints such text literally
with every one of those characters written as an escape (``\\x1b``, ``\\r``, ``\\u202e``),
and cuts a huge value in a message (a 5,000-digit number) to a readable length.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 controls but tab and newline, DEL, C1 controls (``\\x9b`` is a CSI on some terminals),
and the bidirectional controls."""
_CONTROL_OR_NEWLINE = re.compile(_CONTROL.pattern[:-1] + "\t\n]")

_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t", "\x1b": "\\x1b", "\x00": "\\x00"}


def _escape(match: re.Match[str]) -> str:
    character = match.group()
    if character in _NAMED:
        return _NAMED[character]
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: object, *, lines: bool = False) -> str:
    """``text`` with its control characters written as escapes. With ``lines`` newlines and
    tabs are kept (a tool's output of many lines); otherwise the text stays on one line."""
    pattern = _CONTROL if lines else _CONTROL_OR_NEWLINE
    return pattern.sub(_escape, str(text))


def has_control(text: str, *, lines: bool = False) -> bool:
    """True if ``printable(text, lines=lines)`` would change ``text``."""
    return (_CONTROL if lines else _CONTROL_OR_NEWLINE).search(text) is not None


def shown(value: object, limit: int = 60) -> str:
    """``value`` for a message: a string quoted, anything else as Python writes it, on one
    printable line, and cut after ``limit`` characters saying how long it was."""
    try:
        text = repr(value) if isinstance(value, str) else str(value)
    except ValueError:  # an int beyond Python's 4,300 digits for str()
        return "a number of more than 4,300 digits"
    return cut(printable(text), limit)


def cut(text: str, limit: int = 60) -> str:
    """``text`` if it has at most ``limit`` characters, else its start and its length."""
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text):,} characters)"
