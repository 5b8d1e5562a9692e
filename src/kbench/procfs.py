"""A process's state as /proc/PID/stat tells it (standard library only: read on start-up paths)."""

from __future__ import annotations

DEAD_STATES = ("Z", "X")
"""/proc states of a process that has exited: a zombie waiting to be reaped, or one being removed."""


def process_stat(pid: int | str) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (proc(5) field 3 on: state, ppid,
    pgrp, ...; field N is index N - 3), or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            raw = stat.read()
    except OSError:
        return None
    fields = raw.rsplit(b")", 1)[-1].split()
    return [field.decode() for field in fields] or None


def is_living(pid: int | str) -> bool:
    """True while process ``pid`` exists and has not exited (a zombie waiting to be reaped is dead)."""
    fields = process_stat(pid)
    return fields is not None and fields[0] not in DEAD_STATES
