"""What refuses a watch invocation, checked before the watch's row is written or changed: a
refused ``kbench watch`` leaves the store as it found it (docs/exit-codes.md, kbench watch)."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from kbench import git as kgit
from kbench.store.owners import owner_gone
from kbench.watch import git as wgit


def refusal(repo: Path, branches: tuple[str, ...], start: str | None, existing: dict[str, Any] | None,
            fleet_repo: str | None = None) -> str | None:
    """Why this watch cannot poll, or None: a ``--fleet-repo`` URL carrying a credential; a branch
    that names no commit; a ``--from`` that names none, or is not an ancestor of a branch it would
    start (one the watch does not follow yet); the watch (``existing``, its row when it has one)
    run by another live process."""
    if fleet_repo is not None and (why := credential_in_url(fleet_repo)) is not None:
        return why
    heads = dict((existing or {}).get("heads") or {})
    first = wgit.resolve(repo, start) if start is not None else None
    if start is not None and first is None:
        return f"--from {start!r} names no commit in {repo}"
    for branch in branches:
        head = wgit.resolve(repo, branch)
        if head is None:
            return f"branch {branch!r} names no commit in {repo}"
        if first is not None and branch not in heads and not wgit.is_ancestor(repo, first, head):
            return f"--from {start!r} ({first[:12]}) is not an ancestor of {branch} ({head[:12]})"
    owner = dict((existing or {}).get("owner") or {})
    if existing is not None and owner and owner.get("pid") != os.getpid():
        started = datetime.fromisoformat(str(owner.get("since")))
        if not owner_gone(owner.get("pid"), owner.get("boot_id"), owner.get("host"), started):
            return f"watch {existing['id']} is being run by process {owner.get('pid')} on {owner.get('host')}"
    return None


def credential_in_url(url: str) -> str | None:
    """Why ``url`` may not be a fleet repository's URL, or None. The URL goes into every fleet
    task (the fleet's database, the broker's messages) and into each worker's clone (its git
    config), in clear: a password there, or the user part of an http(s) URL (where access tokens
    go: ``https://TOKEN@host/…``), is refused. Workers authenticate themselves instead (a
    credential helper, ``~/.netrc`` or an SSH key on each worker; docs/watch.md)."""
    clean = kgit.without_credential(url)
    if clean is None:
        return None
    return (f"--fleet-repo: the URL carries a credential, which would be stored in clear in every fleet task and "
            f"worker clone; give {clean} and let each worker authenticate (a git "
            "credential helper, ~/.netrc or an SSH key)")


def unwritable_outbox(outbox: Path) -> str | None:
    """Why mails cannot be written into ``outbox`` (made if missing), or None; nothing is made."""
    existing = outbox
    while not existing.exists() and existing.parent != existing:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        try:
            read_only = bool(os.statvfs(existing).f_flag & os.ST_RDONLY)
        except OSError:
            read_only = False
        return f"{outbox} cannot be written ({'a read-only file system' if read_only else 'permission denied'})"
    return None
