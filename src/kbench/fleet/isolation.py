"""``kbench fleet demo --isolated``: workers that share nothing with the submitter but a network.

As root, the demo makes a private bridge with a private IPv4 /24 of its own (Redis and
PostgreSQL listen on the bridge's address only) and, for each worker, a network namespace
joined to the bridge by a veth pair: the worker reaches the servers and nothing else (no
route out, no loopback of the host). Each worker also gets a mount namespace of its own
(``kbench.fleet.enter_namespaces``) in which the submitter's files (the demo's directory,
the current and home directories, the temp dir) are covered by empty tmpfs mounts, and its
home, cache and temp dir are its own. What the worker needs to run kbench (the Python
installation, kbench's sources) is mounted back, read-only.

Every namespace, veth and the bridge are deleted when the demo ends, and by kbench's
guardian (``kbench.children``) if the demo is killed, kill -9 included.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbench import children
from kbench.exit_codes import KbenchError

SUBNETS = ipaddress.ip_network("10.0.0.0/8")
WORKER_DEVICE = "eth0"


class IsolationUnavailable(KbenchError, RuntimeError):
    """Namespaces cannot be made here (not root, or ``ip`` missing or refused)."""


def why_not_isolated() -> str | None:
    """None when this process can make namespaces, else why not (one line)."""
    if os.geteuid() != 0:
        return "not root: network and mount namespaces need root"
    if not Path("/usr/sbin/ip").exists() and not Path("/sbin/ip").exists() and not _which("ip"):
        return "iproute2's ip not found: install Debian's iproute2 package"
    return None


def _which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def ip(*args: str) -> str:
    """``ip ARGS``; IsolationUnavailable with what ip said if it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        raise IsolationUnavailable(f"ip {' '.join(args)} failed: {said[-1] if said else done.returncode}")
    return done.stdout


@dataclass(frozen=True)
class Namespace:
    """A worker's network namespace: its name (``ip netns``), its device and address."""

    name: str
    device: str
    address: str
    host_link: str

    def set_link(self, up: bool) -> None:
        """Bring the worker's only link down (a network partition) or up again."""
        ip("-n", self.name, "link", "set", self.device, "up" if up else "down")


class PrivateNetwork:
    """A bridge on a free private /24 (``address`` is the host's end) and namespaces joined to it."""

    def __init__(self) -> None:
        self.tag = secrets.token_hex(3)
        self.bridge = f"kbb{self.tag}"
        self.network = _free_subnet()
        hosts = self.network.hosts()
        self.address = str(next(hosts))
        self._addresses = hosts
        self.namespaces: list[Namespace] = []

    @property
    def cidr(self) -> str:
        return str(self.network)

    def __enter__(self) -> PrivateNetwork:
        children.guard_network("link", self.bridge)
        try:
            ip("link", "add", self.bridge, "type", "bridge")
            ip("addr", "add", f"{self.address}/{self.network.prefixlen}", "dev", self.bridge)
            ip("link", "set", self.bridge, "up")
        except BaseException:
            self.close()
            raise
        return self

    def add_namespace(self) -> Namespace:
        index = len(self.namespaces) + 1
        name = f"kbench-{self.tag}-{index}"
        host_link, inner = f"kbv{self.tag}h{index}", f"kbv{self.tag}w{index}"
        children.guard_network("netns", name)
        ip("netns", "add", name)
        namespace = Namespace(name, WORKER_DEVICE, str(next(self._addresses)), host_link)
        self.namespaces.append(namespace)
        children.guard_network("link", host_link)  # gone with the namespace, unless it was never moved
        ip("link", "add", host_link, "type", "veth", "peer", "name", inner)
        ip("link", "set", inner, "netns", name)
        ip("-n", name, "link", "set", inner, "name", WORKER_DEVICE)
        ip("-n", name, "addr", "add", f"{namespace.address}/{self.network.prefixlen}", "dev", WORKER_DEVICE)
        ip("-n", name, "link", "set", "lo", "up")
        ip("-n", name, "link", "set", WORKER_DEVICE, "up")
        ip("link", "set", host_link, "master", self.bridge)
        ip("link", "set", host_link, "up")
        return namespace

    def close(self) -> None:
        """Delete the namespaces (killing what still runs in them), their veths and the bridge."""
        for namespace in self.namespaces:
            for pid in _quiet_ip("netns", "pids", namespace.name).split():
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), 9)
            _quiet_ip("netns", "delete", namespace.name)
            children.release_network("netns", namespace.name)
            _quiet_ip("link", "delete", namespace.host_link)
            children.release_network("link", namespace.host_link)
        _quiet_ip("link", "delete", self.bridge)
        children.release_network("link", self.bridge)

    def __exit__(self, *_: object) -> None:
        self.close()


def _quiet_ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=30)
    return done.stdout if done.returncode == 0 else ""


def _free_subnet() -> ipaddress.IPv4Network:
    """A random /24 of 10.0.0.0/8 that no address or route of this host overlaps."""
    used = [ipaddress.ip_network(word, strict=False) for word in _quiet_ip("-4", "-o", "route", "show", "table", "all")
            .split() + _quiet_ip("-4", "-o", "addr", "show").split() if _is_cidr(word)]
    for _ in range(200):
        candidate = ipaddress.IPv4Network(f"10.{secrets.randbelow(254) + 1}.{secrets.randbelow(256)}.0/24")
        if not any(candidate.overlaps(taken) for taken in used if taken.prefixlen > 0):
            return candidate
    raise IsolationUnavailable("no free private /24 in 10.0.0.0/8 for the demo's bridge")


def _is_cidr(word: str) -> bool:
    if "/" not in word or not word[0].isdigit():
        return False
    try:
        ipaddress.ip_network(word, strict=False)
    except ValueError:
        return False
    return True


def hidden_paths(extra: Iterable[Path] = ()) -> list[Path]:
    """The submitter's files a worker must not see: the temp dir, the current and home
    directories, and ``extra`` (the demo's directory, the job file's)."""
    import tempfile

    paths = [Path(tempfile.gettempdir()), Path("/tmp"), Path.cwd(), Path.home(), *extra]
    return _outermost(path.resolve() for path in paths if path.resolve() != Path("/"))


def kept_paths() -> list[Path]:
    """What a worker needs to run kbench, mounted back (read-only) if it lies in a hidden
    directory: the Python installation (a virtual environment's and the one it was made
    from), kbench's sources, the directories of $PYTHONPATH."""
    import kbench

    paths = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parents[1],
             Path(kbench.__file__).resolve().parents[1]]
    paths += [Path(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return _outermost(path.resolve() for path in paths if path.is_dir())


def _outermost(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in sorted(set(paths), key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(outer) for outer in found):
            found.append(path)
    return found


def isolated_command(argv: Sequence[str], *, namespace: Namespace, hide: Sequence[Path], keep: Sequence[Path],
                     config: Path) -> list[str]:
    """``argv`` run inside ``namespace`` and a private mount namespace (see the module doc);
    ``config`` is copied into the worker's own directory and $KBENCH_FLEET_CONFIG names the copy."""
    command = [sys.executable, "-m", "kbench.fleet.enter_namespaces", "--netns", namespace.name,
               "--config", str(config)]
    for path in hide:
        command += ["--hide", str(path)]
    for path in keep:
        command += ["--keep", str(path)]
    return [*command, "--", *argv]
