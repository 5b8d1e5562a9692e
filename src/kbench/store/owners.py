"""Who is measuring a run (pid, boot id, host), and whether that process is still alive.

A run is written ``running`` before it is measured. If its kbench is killed (kill -9,
power loss) the row stays ``running``; the next kbench on the same host sees that the
owner is gone and marks it ``abandoned``. A pid alone is not proof of life: after a
reboot (another boot id) the owner is gone, and a live pid whose process started after
the run began is another process that got the same number.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from kbench.procfs import DEAD_STATES, process_stat

BOOT_ID_FILE = Path("/proc/sys/kernel/random/boot_id")
START_SLACK_S = 2.0
"""A process counts as the owner if it started no later than this after the run began."""


@dataclass(frozen=True)
class Owner:
    pid: int
    boot_id: str
    host: str


def current_owner() -> Owner:
    return Owner(pid=os.getpid(), boot_id=boot_id(), host=socket.gethostname())


def boot_id() -> str:
    try:
        return BOOT_ID_FILE.read_text().strip()
    except OSError:
        return ""


def _process_start(pid: int) -> float | None:
    """When process ``pid`` started (seconds since the epoch), or None if there is none or it
    has exited and only waits to be reaped (a zombie: a kbench killed with -9 whose parent, often
    pid 1 after its shell left, has not reaped it yet, cannot finish its run)."""
    fields = process_stat(pid)
    if fields is None or fields[0] in DEAD_STATES:
        return None
    try:
        btime = next(
            int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime ")
        )
        ticks = int(fields[22 - 3])  # proc(5) field 22: starttime, clock ticks since boot
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return btime + ticks / os.sysconf("SC_CLK_TCK")


def owner_gone(pid: int | None, boot: str | None, host: str | None, started_at: datetime) -> bool:
    """True when the run's owner certainly no longer runs. Runs of another host, and runs
    written before owners were recorded, are never judged (False)."""
    if pid is None or not host or host != socket.gethostname():
        return False
    if boot and boot != boot_id():
        return True
    process_start = _process_start(pid)
    if process_start is None:
        return True
    if started_at.tzinfo is None:  # SQLite gives back the UTC time it was given, without a zone
        started_at = started_at.replace(tzinfo=UTC)
    return process_start > started_at.timestamp() + START_SLACK_S
