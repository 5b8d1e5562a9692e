"""The guardian of one kbench process: kills its children and removes its scratch
directories once that process is gone, however it ended (kill -9 included).

Run as ``python -I -S _guardian.py TOKEN`` by ``kbench.children``; it imports nothing of
kbench. Its standard input is a pipe whose only writer is the kbench process. Lines:

    +g PGID   a child's process group to kill     -g PGID   that group has been reaped
    +d PATH   a scratch directory to remove       -d PATH   that directory is gone
    +n NAME   a network namespace to delete       -n NAME   that namespace is gone
    +l NAME   a network link to delete            -l NAME   that link is gone

End of file means the writer has exited (the kernel closes its descriptors even after
SIGKILL). The guardian then SIGKILLs every group still registered and every process
whose environment carries ``KBENCH_OWNER=TOKEN`` (descendants that left their group,
or a child started just before kbench died), removes the directories still
registered, kills what still runs in each network namespace registered and deletes
it (``ip netns``), deletes the links registered (a bridge; ``ip link``), and exits.
It ignores the signals a terminal or a service manager sends to kbench, so that it
outlives kbench on purpose.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time

OWNER_ENV = b"KBENCH_OWNER"
SCAN_ROUNDS = 5
SCAN_PAUSE_S = 0.05


def _owned_processes(token: bytes) -> list[int]:
    """Processes (other than this one) whose environment holds ``KBENCH_OWNER=token``."""
    marker = OWNER_ENV + b"=" + token
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                variables = f.read().split(b"\0")
        except OSError:
            continue
        if marker in variables:
            found.append(int(entry))
    return found


def _kill_everything(groups: set[int], token: bytes) -> None:
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
    # A process forking while we kill shows up in the next round.
    for _ in range(SCAN_ROUNDS):
        owned = _owned_processes(token)
        if not owned:
            return
        for pid in owned:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(SCAN_PAUSE_S)


def _ip(*args: str) -> str:
    try:
        done = subprocess.run(["ip", *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout


def _delete_network(namespaces: set[str], links: set[str]) -> None:
    for name in namespaces:
        for pid in _ip("netns", "pids", name).split():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        _ip("netns", "delete", name)
    for name in links:
        _ip("link", "delete", name)


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGTSTP,
                signal.SIGTTIN, signal.SIGTTOU, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    token = sys.argv[1].encode()
    groups: set[int] = set()
    directories: set[str] = set()
    namespaces: set[str] = set()
    links: set[str] = set()
    for raw in sys.stdin.buffer:
        command, _, argument = raw.decode(errors="surrogateescape").rstrip("\n").partition(" ")
        if command == "+g" and argument.isdigit():
            groups.add(int(argument))
        elif command == "-g" and argument.isdigit():
            groups.discard(int(argument))
        elif command == "+d" and argument:
            directories.add(argument)
        elif command == "-d":
            directories.discard(argument)
        elif command == "+n" and argument:
            namespaces.add(argument)
        elif command == "-n":
            namespaces.discard(argument)
        elif command == "+l" and argument:
            links.add(argument)
        elif command == "-l":
            links.discard(argument)
    _kill_everything(groups, token)
    if namespaces or links:
        _delete_network(namespaces, links)
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
