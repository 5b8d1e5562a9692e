"""The guest's serial console (ttyS0), written by qemu to a file: tail it, spot trouble."""

from __future__ import annotations

import re
from pathlib import Path

#: console patterns that mean the guest kernel is dead or damaged
PANIC_RE = re.compile(r"Kernel panic - not syncing[^\r\n]*")
PROBLEM_RE = re.compile(
    r"(Kernel panic - not syncing|Oops:|BUG: |WARNING: CPU:|watchdog: BUG: soft lockup|"
    r"INFO: task .* blocked for more than|general protection fault|Call Trace:)[^\r\n]*"
)
#: the first line of each kind of kernel trouble (a trace's "Call Trace:" follows one of them)
TROUBLE_RE = re.compile(
    r"(Kernel panic - not syncing|Oops:|BUG: |WARNING: CPU:|watchdog: BUG: soft lockup|"
    r"INFO: task .* blocked for more than|general protection fault|"
    r"rcu: INFO: rcu_\w+ (self-)?detected stalls?|NMI watchdog: Watchdog detected hard LOCKUP)[^\r\n]*"
)
#: how a kernel ends the report of an oops or a warning
END_OF_TRACE = "---[ end trace"


class ConsoleLog:
    """Incremental reader of a console log file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._text = ""
        self._frozen: str | None = None
        self._scanned = 0  # the text before this index has been searched for trouble

    def refresh(self) -> str:
        """Reads what was appended since the last call; returns it."""
        if self._frozen is not None:
            return ""
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                new = f.read()
        except FileNotFoundError:
            return ""
        self._offset += len(new)
        text = new.decode("utf-8", "replace")
        self._text += text
        return text

    def text(self) -> str:
        self.refresh()
        return self._text if self._frozen is None else self._frozen

    def freeze(self) -> None:
        """Keeps the text in memory (the file is about to be removed)."""
        self.refresh()
        self._frozen = self._text

    def tail(self, lines: int = 40) -> str:
        text = self.text().replace("\r\n", "\n").replace("\r", "\n")
        clean = [ln for ln in text.split("\n")]
        while clean and not clean[-1].strip():
            clean.pop()
        return "\n".join(clean[-lines:])

    def panic(self) -> str | None:
        """The ``Kernel panic - not syncing: ...`` line, if the guest panicked."""
        m = PANIC_RE.search(self.text())
        return m.group(0).strip() if m else None

    def problems(self) -> list[str]:
        """Console lines reporting a panic, oops, BUG, WARNING, lockup or hung task."""
        return [m.group(0).strip() for m in PROBLEM_RE.finditer(self.text())]

    def new_trouble(self) -> str | None:
        """The first line of kernel trouble (oops, BUG, WARNING, lockup, stall, hung task,
        panic) printed since the last call, or None. Only complete lines are searched."""
        text = self.text()
        end = text.rfind("\n", self._scanned) + 1
        if end <= self._scanned:
            return None
        found = TROUBLE_RE.search(text, self._scanned, end)
        self._scanned = end
        return found.group(0).strip() if found else None

    def report(self, first_line: str, before: int = 3, at_most: int = 80) -> str:
        """The console from just before ``first_line`` on (the kernel's whole report),
        at most ``at_most`` lines."""
        lines = self.text().replace("\r\n", "\n").replace("\r", "\n").split("\n")
        start = next((i for i, line in enumerate(lines) if first_line in line), len(lines))
        chosen = lines[max(start - before, 0) : max(start - before, 0) + at_most]
        while chosen and not chosen[-1].strip():
            chosen.pop()
        return "\n".join(chosen) if chosen else self.tail()

    def trace_finished(self) -> bool:
        """True once a kernel report has printed its ``---[ end trace`` line."""
        return END_OF_TRACE in self.text()
