"""A content digest of a directory that is not a git repository (a tarball's tree).

Every regular file and symbolic link counts, whatever any ``.gitignore`` says (``.git``
directories aside). File digests are remembered by (size, mtime, inode) in a memo beside
kbench's other caches, so that the second look at an unchanged 1 GB tree reads no file;
a file changed within the memo's own second is read again next time (git's "racily
clean" rule).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import time
from pathlib import Path

MEMO_VERSION = 1
RACY_S = 2.0


def tree_digest(root: Path, memo_dir: Path) -> str:
    """``dir-<hex>``: the digest of every file's path, type, executable bit and content."""
    root = root.resolve()
    memo_path = memo_dir / f"{hashlib.sha256(str(root).encode()).hexdigest()[:24]}.json"
    memo = _load(memo_path)
    fresh: dict[str, list[int | str]] = {}
    now = time.time()
    total = hashlib.sha256(b"kbench-tree-v1\0")
    for relative, entry in _entries(root):
        if stat.S_ISLNK(entry.st_mode):
            kind, digest = "l", hashlib.sha256(os.readlink(root / relative).encode()).hexdigest()
        else:
            kind = "x" if entry.st_mode & 0o111 else "f"
            key = [entry.st_size, entry.st_mtime_ns, entry.st_ino]
            known = memo.get(relative)
            digest = str(known[3]) if known is not None and known[:3] == key else _file_digest(root / relative)
            if entry.st_mtime_ns / 1e9 < now - RACY_S:
                fresh[relative] = [*key, digest]
        total.update(f"{relative}\0{kind}\0{digest}\n".encode(errors="surrogateescape"))
    _save(memo_path, fresh)
    return "dir-" + total.hexdigest()[:40]


def _entries(root: Path) -> list[tuple[str, os.stat_result]]:
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in files:
            path = os.path.join(directory, name)
            with contextlib.suppress(FileNotFoundError):
                entry = os.lstat(path)
                if stat.S_ISREG(entry.st_mode) or stat.S_ISLNK(entry.st_mode):
                    found.append((os.path.relpath(path, root), entry))
        for name in dirs:  # a symbolic link to a directory is listed with the directories
            path = os.path.join(directory, name)
            if os.path.islink(path):
                found.append((os.path.relpath(path, root), os.lstat(path)))
    found.sort(key=lambda item: item[0])
    return found


def _file_digest(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _load(path: Path) -> dict[str, list[int | str]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("version") != MEMO_VERSION or not isinstance(data.get("files"), dict):
        return {}
    files: dict[str, list[int | str]] = data["files"]
    return files


def _save(path: Path, files: dict[str, list[int | str]]) -> None:
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.tmp{os.getpid()}")
        partial.write_text(json.dumps({"version": MEMO_VERSION, "files": files}))
        partial.replace(path)
