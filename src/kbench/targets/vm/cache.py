"""Cache directory, content hashing and inter-process locks for the VM target."""

from __future__ import annotations

import fcntl
import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def default_cache_dir() -> Path:
    """``$KBENCH_CACHE_DIR``, else ``$XDG_CACHE_HOME/kbench``, else ``~/.cache/kbench``."""
    env = os.environ.get("KBENCH_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "kbench"


def file_digest(path: Path) -> str:
    """SHA-256 of a file's content (hex)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


class Hasher:
    """Accumulates a content hash of named items (strings, bytes, files)."""

    def __init__(self, kind: str) -> None:
        self._h = hashlib.sha256(kind.encode() + b"\0")

    def add(self, name: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else value
        self._h.update(f"{name}\0{len(data)}\0".encode())
        self._h.update(data)

    def add_file(self, name: str, path: Path) -> None:
        self.add(name, file_digest(path))

    def hexdigest(self, length: int = 20) -> str:
        return self._h.hexdigest()[:length]


@contextmanager
def locked(lock_path: Path) -> Iterator[None]:
    """Holds an exclusive ``flock`` on ``lock_path`` (created if needed)."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
