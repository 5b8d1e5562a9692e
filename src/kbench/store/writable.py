"""Whether a SQLite database file can be written here, asked before SQLite is: SQLite's own
answer to a file it may not write is often "unable to open database file", which names
neither the file nor what is wrong with it."""

from __future__ import annotations

import os
from pathlib import Path


def read_only_reason(path: Path) -> str | None:
    """Why the SQLite database at ``path`` (its directory made already) cannot be written or
    created here; None when nothing says so. SQLite writes beside the file too (its ``-wal``,
    ``-shm`` and ``-journal`` files), so a directory it cannot write is a reason while the
    file's ``-wal`` is not there already."""
    directory = path.parent
    if _read_only_file_system(path if path.exists() else directory):
        return f"{'it is' if path.exists() else 'its directory is'} on a file system mounted read-only"
    if path.exists() and not os.access(path, os.W_OK):
        return "this user may not write the file"
    if not os.access(directory, os.W_OK | os.X_OK):
        if not path.exists():
            return f"this user may not create files in {directory}"
        if not path.with_name(path.name + "-wal").exists():
            return f"this user may not create SQLite's journal files beside it, in {directory}"
    return None


def _read_only_file_system(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False
