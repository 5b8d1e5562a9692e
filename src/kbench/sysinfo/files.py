"""How the run context reads a machine's /proc and /sys: here, or through a VM guest's agent."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

FileReader = Callable[[str], "str | None"]
"""Reads a text file of the machine being described; None when it does not exist."""


def read_local_file(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None
