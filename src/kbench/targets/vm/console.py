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


class ConsoleLog:
    """Incremental reader of a console log file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._text = ""
        self._frozen: str | None = None

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
