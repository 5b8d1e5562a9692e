"""Workspaces of a store's long work in kbench's cache, keyed by the store's identity and held by one process.

A bisection's worktrees and a watch's builds live in a directory of kbench's cache. Row ids
count from 1 in every store, so two stores' bisection 1 would share ``bisect/1``: the first
to finish removed it under the other, whose commands then failed. A workspace is therefore
``<cache>/<kind>/<store identity>/<row id>`` (``Store.identity``, a UUID kept in the store),
and the process working there holds its lock (``<row id>.lock`` beside it, naming the
process): another process is refused (WorkspaceBusy) instead of sharing it, the holder
removes only its own workspace, and ``kbench cache prune`` leaves a held one alone.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from kbench.cachefiles import LockBusy, default_cache_dir, locked
from kbench.exit_codes import KbenchError

BISECT = "bisect"
WATCH = "watch"
ORACLE = "oracle"
KINDS = (BISECT, WATCH, ORACLE)
"""The cache's folders of workspaces (``kbench cache prune`` knows them)."""


class WorkspaceBusy(KbenchError, RuntimeError):
    """Another process works in this workspace (the message names it)."""


def workspace_dir(kind: str, store_identity: str, name: int | str) -> Path:
    """The workspace of row ``name`` (a bisection's or a watch's id) of the store ``store_identity``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return default_cache_dir() / kind / store_identity / str(name)


def lock_of(workspace: Path) -> Path:
    """The lock file of ``workspace`` (beside it: removing the workspace leaves the lock to its holder)."""
    return workspace.with_name(workspace.name + ".lock")


@contextmanager
def held(workspace: Path, what: str) -> Iterator[Path]:
    """``workspace`` held by this process while the block runs; WorkspaceBusy when another holds it.

    ``what`` names the work in the refusal (``bisection 3``)."""
    me = f"pid {os.getpid()} on {socket.gethostname()}"
    with ExitStack() as stack:
        try:
            stack.enter_context(locked(lock_of(workspace), wait=False, holder=me))
        except LockBusy as busy:
            raise WorkspaceBusy(f"{what} is in use by another kbench ({busy.holder or 'a process'}): its "
                                f"workspace {workspace} is locked; wait for it to end, or stop that process") from None
        yield workspace
