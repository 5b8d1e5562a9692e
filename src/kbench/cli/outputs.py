"""Files a command will write: checked before anything runs, written with one-line errors."""

from __future__ import annotations

import os
from pathlib import Path


def output_problem(path: Path) -> str | None:
    """Why ``path`` cannot be written, or None; nothing is created."""
    if path.is_dir():
        return f"cannot write {path}: it is a directory"
    parent = path.absolute().parent
    if not parent.exists():
        return f"cannot write {path}: its directory {parent} does not exist"
    if not parent.is_dir():
        return f"cannot write {path}: {parent} is not a directory"
    if path.exists():
        if not os.access(path, os.W_OK):
            return f"cannot write {path}: permission denied or read-only file system"
    elif not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot write {path}: its directory {parent} cannot be written (permission or read-only file system)"
    return None


def directory_problem(directory: Path) -> str | None:
    """Why files cannot be created in ``directory`` (made if missing), or None."""
    probe = directory
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        return f"cannot write in {directory}: {probe} is not a directory"
    if not os.access(probe, os.W_OK | os.X_OK):
        return f"cannot write in {directory}: {probe} cannot be written (permission or read-only file system)"
    return None
