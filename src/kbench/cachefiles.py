"""kbench's cache directory, content hashing and inter-process locks (the VM target's files,
built kernels, built modules)."""

from __future__ import annotations

import contextlib
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


class LockBusy(RuntimeError):
    """``locked(..., wait=False)``: another process holds the lock (``holder`` says who, if it said)."""

    def __init__(self, lock_path: Path, holder: str) -> None:
        super().__init__(f"{lock_path} is held by {holder or 'another process'}")
        self.lock_path = lock_path
        self.holder = holder


@contextmanager
def locked(lock_path: Path, *, wait: bool = True, holder: str = "") -> Iterator[None]:
    """Holds an exclusive ``flock`` on ``lock_path``, created for the occasion and removed
    on release, so that no ``.lock`` file is left behind. ``wait=False``: LockBusy at once
    when another process holds it, naming what that holder wrote as its ``holder``.

    Removing a lock file is safe only with care: a waiter may hold the descriptor of a
    file that its holder has just unlinked. So after taking the lock, a holder checks
    that ``lock_path`` still names the file it locked, and starts again if not.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        f = open(lock_path, "a+")  # noqa: SIM115  (closed below, after the unlink)
        try:
            try:
                fcntl.flock(f, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                raise LockBusy(lock_path, f.read().strip()) from None
            try:
                current = os.stat(lock_path)
            except FileNotFoundError:
                continue  # its holder removed it: lock the new one
            if current.st_ino != os.fstat(f.fileno()).st_ino:
                continue
            if holder:
                f.truncate(0)
                f.write(holder)
                f.flush()
            try:
                yield
            finally:
                with contextlib.suppress(FileNotFoundError):
                    lock_path.unlink()  # while still held: waiters on it will start again
                fcntl.flock(f, fcntl.LOCK_UN)
            return
        finally:
            f.close()


def remove_stale_lock(lock_path: Path) -> bool:
    """Remove ``lock_path`` if no process holds it (a file a killed kbench left behind);
    True if removed. It is unlinked while locked, as ``locked`` does, so a process that
    opened it meanwhile starts again on a new file."""
    try:
        f = open(lock_path)  # noqa: SIM115
    except OSError:
        return False
    with f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        try:
            if os.stat(lock_path).st_ino != os.fstat(f.fileno()).st_ino:
                return False
            lock_path.unlink()
            return True
        except OSError:
            return False
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
