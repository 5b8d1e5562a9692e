"""Files a fleet job carries to workers that share nothing with its submitter.

At submit (``gather``, then ``store_inputs``): the job's ``files:`` and the relative paths in a
``cmd`` (words with a ``/`` inside: ``./prog``, ``data/in.txt``) that exist beside the job file are hashed
(SHA-256), stored once each in the fleet's database (``kbench.store.inputs``: rows of
``bytea``, one transaction per input; an input stored already is not stored again), and the
job row keeps the manifest (``fleet_jobs.inputs``): each file's path relative to the job's
folder, digest, size and mode. A path that does not exist, is not a regular file (a symbolic
link is followed: its content travels) or passes a size limit is refused before anything is
stored or sent; ``files:`` names paths inside the job's folder (no ``..``, no leading ``/``).

On a worker (``placed``): each input is looked up in this machine's cache by digest
(``$XDG_CACHE_HOME/kbench/fleet/inputs``); one it lacks is fetched from the store into a
temporary file, checked (digest and size) and renamed into place, so a fetch cut short is
never used; one in the cache is hashed again before use. A mismatch, or an input the store
does not have, refuses the task (``InputRefused``). The files are then copied into the
task's own directory at their paths, and the task's programs run there.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shlex
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from sqlalchemy import Engine

from kbench.fleet.plan import COMMAND_BENCHMARK, PlanError
from kbench.jobs import JobInstance

log = logging.getLogger("kbench.fleet")

MAX_FILE_BYTES = 256 << 20
"""The largest file a job carries (256 MiB)."""
MAX_JOB_BYTES = 1 << 30
"""The most a job carries in all (1 GiB)."""
MAX_FILES = 1000
"""The most files one job carries."""
_READ = 1 << 20


class InputRefused(RuntimeError):
    """A worker cannot have a job's input as submitted: the store lacks it, or its bytes do not
    have its digest (in the store or in this machine's cache after a fresh fetch)."""


@dataclass(frozen=True)
class JobInput:
    path: str  # relative to the job file's folder (and to the task's directory on the worker)
    digest: str  # SHA-256 of the content (hex)
    size: int
    mode: int  # 0o755 or 0o644: whether it runs

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "digest": self.digest, "size": self.size, "mode": self.mode}


def sha256_file(path: Path) -> str:
    hasher = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_READ):
            hasher.update(chunk)
    return hasher.hexdigest()


def gather(job_path: Path, files: Sequence[tuple[str, int]], instances: Sequence[JobInstance]) -> list[JobInput]:
    """What the job at ``job_path`` carries: its ``files:`` (each with its line) and the relative
    paths in each ``command`` instance's ``cmd`` (``./prog``, ``data/in.txt``) found beside the job;
    PlanError naming the first that is missing (a ``./`` program too), not a file, or too large."""
    folder = job_path.parent
    named: dict[str, str] = {}  # normalised path -> where the job names it
    for text, line in files:
        named.setdefault(_normalised(text), f"{job_path.name}:{line}: files: {text!r}")
    for instance in instances:
        for index, word in enumerate(_cmd_paths(instance)):
            if not word or _normalised(word) in named:
                continue
            if (folder / word).is_file():
                named[_normalised(word)] = f"instance {instance.id}: cmd names {word!r}"
            elif index == 0 and word.startswith("./"):
                raise PlanError(f"instance {instance.id}: cmd runs {word!r}, which is not in the job file's folder "
                                f"{folder}: a fleet worker has only what the job carries (put it there, or name it "
                                "under files:)")
    if len(named) > MAX_FILES:
        raise PlanError(f"the job carries {len(named)} files (at most {MAX_FILES}): pack them into one archive")
    found: list[JobInput] = []
    total = 0
    for relative, where in named.items():
        path = folder / relative
        if not path.exists():
            raise PlanError(f"{where}: no such file {path}: a job names only files that exist where it is submitted")
        if not path.is_file():
            raise PlanError(f"{where}: {path} is not a regular file (a directory is not carried: name its files, "
                            "or pack them into one archive)")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise PlanError(f"{where}: {path} has {size} bytes, more than a job carries in one file "
                            f"({MAX_FILE_BYTES >> 20} MiB)")
        total += size
        if total > MAX_JOB_BYTES:
            raise PlanError(f"the job's files pass {MAX_JOB_BYTES >> 20} MiB in all (at {where}): a job carries "
                            "at most that")
        mode = 0o755 if path.stat().st_mode & 0o111 else 0o644
        found.append(JobInput(relative, sha256_file(path), size, mode))
    return found


def _cmd_paths(instance: JobInstance) -> list[str]:
    """The words of a ``command`` instance's ``cmd`` that are relative paths (``./prog``,
    ``data/in.txt``: a ``/`` inside, none first, no ``..``), its program first when it is one
    (an empty string holds the place of a program that is not)."""
    if instance.benchmark != COMMAND_BENCHMARK:
        return []
    try:
        words = shlex.split(instance.params.get("cmd", ""))
    except ValueError:
        return []
    return [word if _relative_path(word) else "" for word in words[:1]] + [
        word for word in words[1:] if _relative_path(word)]


def _relative_path(word: str) -> bool:
    return "/" in word and not word.startswith(("/", "~", "-")) and ".." not in word.split("/") and "=" not in word


def _normalised(text: str) -> str:
    return str(PurePosixPath(text))


def store_inputs(engine: Engine, found: Iterable[JobInput], folder: Path) -> dict[str, Any] | None:
    """Store each input not stored yet; the job's manifest (None when it carries nothing)."""
    from kbench.store.inputs import InputCorrupt, InputStore

    chosen = list(found)
    if not chosen:
        return None
    store = InputStore(engine)
    for item in chosen:
        try:
            store.put_file(item.digest, folder / item.path)
        except InputCorrupt as exc:
            raise PlanError(f"files: {item.path}: {exc}") from None
    return {"files": [item.to_dict() for item in chosen]}


def manifest_files(manifest: dict[str, Any] | None) -> list[JobInput]:
    if not manifest:
        return []
    return [JobInput(str(f["path"]), str(f["digest"]), int(f["size"]), int(f["mode"]))
            for f in manifest.get("files") or ()]


def cached(engine: Engine, item: JobInput, cache: Path) -> Path:
    """This machine's copy of ``item`` (fetched from the store when it lacks it), checked."""
    from kbench.store.inputs import InputCorrupt, InputStore

    path = cache / item.digest[:2] / item.digest
    if path.is_file():
        if path.stat().st_size == item.size and sha256_file(path) == item.digest:
            return path
        log.warning("input %s (%s): the cached copy does not have its digest; fetched again", item.digest, item.path)
        path.unlink(missing_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    _drop_dead_partials(path)
    partial = path.with_name(f"{item.digest}.part{os.getpid()}")
    try:
        with open(partial, "wb") as out:
            for chunk in InputStore(engine).read(item.digest):
                out.write(chunk)
        size = partial.stat().st_size
        if size != item.size:
            raise InputCorrupt(f"input {item.digest}: {size} bytes in the store, the job says {item.size}")
    except KeyError:
        partial.unlink(missing_ok=True)
        raise InputRefused(f"files: {item.path}: the fleet's store has no input {item.digest} (deleted?); "
                           "submit the job again") from None
    except InputCorrupt as exc:
        partial.unlink(missing_ok=True)
        raise InputRefused(f"files: {item.path}: refused: {exc}") from None
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    os.replace(partial, path)
    log.info("input %s (%s): fetched, %d bytes, digest checked", item.digest, item.path, item.size)
    return path


def _drop_dead_partials(path: Path) -> None:
    """Remove the partial fetches of ``path`` whose process is gone (killed mid-transfer): they are
    never read (only a whole, checked file is renamed to its digest), only left behind."""
    from kbench.procfs import is_living

    for partial in path.parent.glob(f"{path.name}.part*"):
        pid = partial.name.rpartition(".part")[2]
        if not (pid.isdigit() and is_living(int(pid))):
            partial.unlink(missing_ok=True)


def placed(engine: Engine, manifest: dict[str, Any] | None, cache: Path, workdir: Path) -> None:
    """Every input of ``manifest`` at its path under ``workdir`` (made), from this machine's cache."""
    for item in manifest_files(manifest):
        source = cached(engine, item, cache)
        target = workdir / item.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)  # a copy: a program that writes to its file leaves the cache whole
        target.chmod(item.mode)
