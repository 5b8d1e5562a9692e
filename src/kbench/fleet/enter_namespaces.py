"""Run a command (a ``kbench worker``) in a network namespace and a private mount namespace.

    python -m kbench.fleet.enter_namespaces --netns NAME --config FILE
        [--hide DIR]... [--keep DIR]... -- COMMAND...

As root (``kbench fleet demo --isolated``, ``kbench.fleet.isolation``): joins network
namespace NAME (``ip netns``), enters a mount namespace of its own (nothing mounted here
propagates back), covers each ``--hide`` directory and /tmp with an empty tmpfs, mounts
each ``--keep`` directory back read-only (what the command needs to run, e.g. the Python
installation), makes the command's home, cache and temp dir in the new /tmp, copies the
fleet config ``--config`` there, and executes COMMAND. It imports nothing but the standard
library: it runs before the worker's own start-up.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import sys
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
PRIVATE_ROOT = Path("/tmp")
WORKER_DIR = PRIVATE_ROOT / "kbench-worker"

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(None if source is None else source.encode(), target.encode(),
                       None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
                       None if data is None else data.encode()), f"mount {target}")


def _hide(path: Path) -> None:
    if path.is_dir():
        _mount("kbench-hidden", str(path), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")


def _keep(fd: int, path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True)
    _mount(f"/proc/self/fd/{fd}", str(path), None, MS_BIND | MS_REC)
    _mount(None, str(path), None, MS_REMOUNT | MS_BIND | MS_RDONLY)


def enter(netns: str, hide: list[Path], keep: list[Path]) -> None:
    """Join ``netns``, then hide and keep (see the module doc)."""
    with open(f"/run/netns/{netns}", "rb") as handle:
        _check(_libc.setns(handle.fileno(), CLONE_NEWNET), f"joining network namespace {netns}")
    _check(_libc.unshare(CLONE_NEWNS), "unsharing the mount namespace")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # /sys as this network namespace sees it (its devices, not the host's), as `ip netns exec` does.
    if _libc.umount2(b"/sys", MNT_DETACH) == 0:
        _mount("sysfs", "/sys", "sysfs", 0)
    kept = {path: os.open(path, os.O_PATH | os.O_DIRECTORY) for path in keep if path.is_dir()}
    inside_kept = [path for path in hide if any(path.is_relative_to(k) and path != k for k in kept)]
    for path in [PRIVATE_ROOT, *hide]:
        if path not in inside_kept:
            _hide(path)
    for path, fd in kept.items():
        if any(path.is_relative_to(hidden) for hidden in [PRIVATE_ROOT, *hide]):
            _keep(fd, path)
        os.close(fd)
    for path in inside_kept:
        _hide(path)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="kbench.fleet.enter_namespaces")
    parser.add_argument("--netns", required=True)
    parser.add_argument("--config", required=True, type=Path)
    parser.add_argument("--hide", action="append", default=[], type=Path)
    parser.add_argument("--keep", action="append", default=[], type=Path)
    parser.add_argument("command", nargs="+")
    args = parser.parse_args(argv)
    config = args.config.read_bytes()
    enter(args.netns, args.hide, args.keep)
    home, cache, tmp = WORKER_DIR / "home", WORKER_DIR / "cache", WORKER_DIR / "tmp"
    for directory in (home, cache, tmp):
        directory.mkdir(parents=True, mode=0o700)
    copy = WORKER_DIR / "fleet.toml"
    fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(config)
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(cache), "TMPDIR": str(tmp),
           "KBENCH_FLEET_CONFIG": str(copy)}
    env.pop("XDG_RUNTIME_DIR", None)
    os.chdir(home)
    os.execvpe(args.command[0], args.command, env)


if __name__ == "__main__":
    main(sys.argv[1:])
