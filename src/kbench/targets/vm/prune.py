"""``kbench cache prune``: what the VM target's cache may lose, and removing it.

The cache (``kbench.cachefiles.default_cache_dir``) holds Debian kernels with their
headers (``kernels/RELEASE/``), built modules (``modules/NAME-KEY/``), initramfs images
(``initramfs/*.cpio``), decompressed boot images (``vmlinux/*``), the KVM verdict
(``accel.json``), kernels kbench built (``built-kernels/KEY/``) and the workspaces it built
them in (``kernel-workspaces/``: a checkout and an incremental build directory each), and the
workspaces of a store's long work (``bisect|watch|oracle/STORE-ID/ID``: ``kbench.workspaces``;
one a killed bisection or watch left behind is made again when it resumes).
Everything there can be made again; it is kept because it is slow to make. Always removed:
lock files nobody holds, half-written files of a process that is gone, and entries a
killed kbench left unfinished. With ``older_than_s``, also complete entries not used for
that long; with ``everything``, every entry. Entries a running
kbench holds locked are left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kbench.cachefiles import remove_stale_lock
from kbench.kernels.build import ENTRIES, TREE_DIGESTS, WORKSPACES
from kbench.kernels.built import MARKER as BUILT_MARKER
from kbench.workspaces import KINDS as STORE_WORKSPACES

OWN_FOLDERS = ("kernels", "modules", "initramfs", "vmlinux", ENTRIES, WORKSPACES, TREE_DIGESTS)
"""The cache's folders that are kbench's own through and through (``_store_workspaces`` has the others)."""
KERNEL_MARKER = "resolved.json"
MODULE_MARKER = ".kbench-built"
_PARTIAL = re.compile(r"\.tmp(\d+)$")
PARTIAL_GRACE_S = 3600.0
"""A half-written file whose pid cannot be judged is removed after this long."""


@dataclass(frozen=True)
class Removal:
    path: str
    bytes: int
    why: str


@dataclass
class PruneReport:
    removed: list[Removal] = field(default_factory=list)
    kept: int = 0
    dry_run: bool = False

    @property
    def freed(self) -> int:
        return sum(item.bytes for item in self.removed)


def prune_cache(
    cache_dir: Path, *, older_than_s: float | None = None, everything: bool = False, dry_run: bool = False
) -> PruneReport:
    """Remove what may go from ``cache_dir`` (see the module docstring); say what went."""
    report = PruneReport(dry_run=dry_run)
    if not cache_dir.is_dir():
        return report
    now = time.time()

    def stale(path: Path) -> bool:
        return everything or (older_than_s is not None and now - _last_used(path) > older_than_s)

    for lock in [*_own_files(cache_dir, "*.lock"), *_workspace_locks(cache_dir)]:
        if lock.is_file() and ((dry_run and _unheld(lock)) or (not dry_run and remove_stale_lock(lock))):
            report.removed.append(Removal(str(lock), 0, "lock file nobody holds"))
    for partial in _partial_files(cache_dir, now):
        _remove(report, partial, "half-written by a process that is gone")
    for entry, state in _entries(cache_dir):
        if state == IN_USE or (state == COMPLETE and not stale(entry)):
            report.kept += 1
        elif state == COMPLETE:
            _remove(report, entry, "every entry" if everything else "not used lately")
        else:
            _remove(report, entry, state)
    return report


COMPLETE = "complete"
IN_USE = "in use"


def _entries(cache_dir: Path) -> Iterator[tuple[Path, str]]:
    """Each cache entry with its state: COMPLETE, IN_USE, or why it is broken."""
    kernels = cache_dir / "kernels"
    if kernels.is_dir():
        for base in sorted(kernels.iterdir()):
            if not base.is_dir():
                continue
            if _in_use(base):
                yield base, IN_USE
                continue
            for scratch in sorted(base.glob("debs-*")) + sorted(base.glob("root-*")):
                yield scratch, "an unfinished download"
            yield base, COMPLETE if (base / KERNEL_MARKER).is_file() else "an unfinished download"
    modules = cache_dir / "modules"
    if modules.is_dir():
        for out in sorted(modules.iterdir()):
            if out.is_dir():
                done = (out / MODULE_MARKER).is_file()
                yield out, IN_USE if _in_use(out) else COMPLETE if done else "an unfinished build"
    yield from _kernel_builds(cache_dir)
    yield from _store_workspaces(cache_dir)
    files = [path for folder, pattern in (("initramfs", "*.cpio"), ("vmlinux", "*.elf"), ("vmlinux", "*.no-pvh"),
                                          (TREE_DIGESTS, "*.json"))
             for path in sorted((cache_dir / folder).glob(pattern))]
    if (cache_dir / "accel.json").is_file():
        files.append(cache_dir / "accel.json")
    for path in files:
        yield path, IN_USE if _in_use(path) else COMPLETE


def _kernel_builds(cache_dir: Path) -> Iterator[tuple[Path, str]]:
    """Kernels kbench built (``built-kernels/KEY``, a half-made one as ``KEY.tmpPID``) and the
    workspaces they were built in (a checkout and a build directory each, in use while locked)."""
    entries = cache_dir / ENTRIES
    if entries.is_dir():
        for entry in sorted(path for path in entries.iterdir() if path.is_dir()):
            partial = _PARTIAL.search(entry.name)
            if partial is not None:
                living = Path(f"/proc/{partial.group(1)}").exists()
                yield entry, IN_USE if living else "an unfinished build"
            else:
                yield entry, COMPLETE if (entry / BUILT_MARKER).is_file() else "an unfinished build"
    workspaces = cache_dir / WORKSPACES
    if workspaces.is_dir():
        for workspace in sorted(path for path in workspaces.iterdir() if path.is_dir()):
            yield workspace, IN_USE if _in_use(workspace) else COMPLETE


def _store_folders(cache_dir: Path) -> Iterator[Path]:
    """``KIND/STORE-ID`` of every store that has workspaces here (a folder named by a UUID: what
    else lies there, a user's --workdir, say, is not kbench's to prune, nor is anything inside a
    workspace, git's own lock files among it)."""
    for kind in STORE_WORKSPACES:
        for store in sorted((cache_dir / kind).glob("*")):
            with contextlib.suppress(ValueError):
                uuid.UUID(store.name)
                if store.is_dir():
                    yield store


def _store_workspaces(cache_dir: Path) -> Iterator[tuple[Path, str]]:
    """Each workspace of a store's bisection, watch or oracle (``KIND/STORE-ID/ID``): in use while
    the process working there holds its lock, else complete (its work can be made again)."""
    for store in _store_folders(cache_dir):
        for workspace in sorted(path for path in store.iterdir() if path.is_dir()):
            yield workspace, IN_USE if _in_use(workspace) else COMPLETE


def _workspace_locks(cache_dir: Path) -> list[Path]:
    """The lock files of the stores' workspaces (``KIND/STORE-ID/ID.lock``), none inside a workspace."""
    return [lock for store in _store_folders(cache_dir) for lock in sorted(store.glob("*.lock"))]


def _own_files(cache_dir: Path, pattern: str) -> list[Path]:
    """Files matching ``pattern`` at the top of the cache and in kbench's own folders."""
    found = sorted(cache_dir.glob(pattern))
    for folder in OWN_FOLDERS:
        if (cache_dir / folder).is_dir():
            found += sorted((cache_dir / folder).rglob(pattern))
    return found


def _in_use(entry: Path) -> bool:
    """True while a kbench holds the entry's lock (it is being made or checked)."""
    for lock in (entry.with_name(entry.name + ".lock"), entry.with_suffix(".lock")):
        if lock.is_file() and not _unheld(lock):
            return True
    return False


def _unheld(lock: Path) -> bool:
    try:
        with open(lock) as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(f, fcntl.LOCK_UN)
            return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def _partial_files(cache_dir: Path, now: float) -> Iterator[Path]:
    for path in _own_files(cache_dir, "*.tmp*"):
        match = _PARTIAL.search(path.name)
        if match is None or not path.is_file():
            continue
        pid = int(match.group(1))
        if not Path(f"/proc/{pid}").exists() or now - path.stat().st_mtime > PARTIAL_GRACE_S:
            yield path


def _last_used(path: Path) -> float:
    """When the entry was last made or used: a file's access or change time; for a
    directory, its change time and its marker's (kbench reads the marker on every use).
    A directory's own access time is not used: listing it, as pruning does, changes it."""
    try:
        info = path.stat()
    except OSError:
        return 0.0
    if not path.is_dir():
        return max(info.st_atime, info.st_mtime)
    newest = info.st_mtime
    for marker in (path / KERNEL_MARKER, path / MODULE_MARKER, path / BUILT_MARKER, path / "logs"):
        with contextlib.suppress(OSError):
            marker_info = marker.stat()
            newest = max(newest, marker_info.st_atime, marker_info.st_mtime)
    return newest


def _size(path: Path) -> int:
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).lstat().st_size
    return total


def _remove(report: PruneReport, path: Path, why: str) -> None:
    size = _size(path)
    if not report.dry_run:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        if path.exists():
            return
    report.removed.append(Removal(str(path), size, why))
