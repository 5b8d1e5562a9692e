"""Running git: kbench's one wrapper, its timeouts and its error.

Every git command kbench runs goes through ``run`` (the completed process) or ``output``
(its standard output, GitError when git refuses). Each call names how long it may take,
from the bounds below, so that the difference between reading a ref and cloning a remote
repository is stated once, here.
"""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

QUICK_S = 30.0
"""Reading one ref of a local repository (``rev-parse HEAD``, the current branch)."""
LOG_S = 60.0
"""A bounded log of a local commit range, read for a report (``history``'s version notes)."""
WATCH_S = 300.0
"""What ``kbench watch`` asks of its repository: refs, history walks, merge bases, fetches."""
NETWORK_S = 1800.0
"""Cloning or fetching a whole remote repository (a fleet worker's copy of a watched one)."""
UNBOUNDED = None
"""Checking out and removing worktrees of the tree being bisected: as long as the tree takes."""


class GitError(RuntimeError):
    """git could not run, ran out of time, or refused (the message says what it said)."""


def _place(repo: Path | str | None, cwd: Path | None) -> str:
    return f" in {repo if repo is not None else cwd or Path.cwd()}"


def run(
    repo: Path | str | None, *args: str, timeout: float | None, cwd: Path | None = None, text: bool = True
) -> subprocess.CompletedProcess[str]:
    """``git [-C repo] ARGS`` with its output captured; GitError when git cannot run or takes
    longer than ``timeout`` seconds (None: no bound). A refusal is the caller's to read."""
    command: Sequence[str] = ["git", *(("-C", str(repo)) if repo is not None else ()), *args]
    try:
        return subprocess.run(command, cwd=cwd, capture_output=True, text=text, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {' '.join(args)}{_place(repo, cwd)}: {exc}") from exc


def said(proc: subprocess.CompletedProcess[str]) -> str:
    """The first line git said on refusing (stderr, else stdout, else its exit status)."""
    return (proc.stderr.strip() or proc.stdout.strip() or f"exit {proc.returncode}").splitlines()[0]


def output(repo: Path | str | None, *args: str, timeout: float | None, cwd: Path | None = None) -> str:
    """``git [-C repo] ARGS``'s standard output; GitError (``git ARGS in REPO: what it said``)
    when it cannot run, runs out of time or exits non-zero."""
    proc = run(repo, *args, timeout=timeout, cwd=cwd)
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args)}{_place(repo, cwd)}: {said(proc)}")
    return proc.stdout


def without_credential(url: str) -> str | None:
    """``url`` without the credential it carries, or None when it carries none. A password, or the
    user part of an http(s) URL (where access tokens go: ``https://TOKEN@host/…``), is a credential;
    a path, ``file://`` and scp-like ``user@host:path`` (an SSH user name is not a secret) carry none.
    A URL that kbench stores or sends (fleet tasks, job inputs, worker clones) must carry none."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if "://" not in url or scheme in ("file", ""):
        return None
    token_user = parts.username is not None and scheme.startswith(("http", "ftp"))
    if parts.password is None and not token_user:
        return None
    user = f"{parts.username}@" if parts.username is not None and not token_user else ""
    host = user + (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=host))
