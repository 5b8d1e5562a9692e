"""Choose the accelerator: KVM when it really works on this host, else TCG.

``/dev/kvm`` may exist yet a guest never boots (nested virtualisation): the first
session with ``accel="auto"`` makes a bounded KVM attempt and the outcome is
remembered in ``cache_dir/accel.json``, keyed by host kernel and qemu version, so
later sessions go straight to the right accelerator.

Under TCG, ``tcg_threading`` says whether the vCPUs may run in threads of their own
(qemu's multi-threaded TCG) or must take turns in one thread: before qemu 8.1 the
threaded mode can keep running kernel code that another vCPU has just rewritten
(docs/VM.md, "Accelerator"), which crashes the guest when a kprobe is removed from a
function that is being called.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench import children
from kbench.cachefiles import locked

from .errors import VmTargetError


@dataclass(frozen=True)
class AccelChoice:
    accel: str  # "kvm" | "tcg"
    reason: str
    needs_probe: bool = False  # "kvm" chosen, but never tried on this host+qemu


@dataclass(frozen=True)
class TcgThreading:
    thread: str  # "single" (vCPUs take turns in one host thread) | "multi" (a thread each)
    reason: str


#: The first qemu release whose multi-threaded TCG locks the guest pages it translates before
#: reading them ("accel/tcg: Always lock pages before translation", qemu commit deba78709ae8).
#: Before it, a vCPU translating a block while another vCPU rewrites those bytes can link the
#: block after the writer's invalidation has passed: every vCPU then runs the old bytes until
#: the page is written again.
MTTCG_FIXED_IN = (8, 1)
TCG_THREAD_ENV = "KBENCH_TCG_THREAD"


def kvm_device_usable(dev: Path = Path("/dev/kvm")) -> tuple[bool, str]:
    if not dev.exists():
        return False, f"{dev} does not exist"
    if not os.access(dev, os.R_OK | os.W_OK):
        return False, f"{dev} is not readable and writable by this user"
    return True, f"{dev} is usable"


def qemu_version(qemu: str) -> str:
    try:
        proc = children.run([qemu, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return str((proc.stdout.splitlines() or ["unknown"])[0]).strip()


def qemu_release(version_line: str) -> tuple[int, int] | None:
    """(major, minor) from ``qemu --version``'s first line, e.g. "QEMU emulator version 7.2.22 (…)"."""
    match = re.search(r"version (\d+)\.(\d+)", version_line)
    return (int(match.group(1)), int(match.group(2))) if match else None


def tcg_threading(qemu: str) -> TcgThreading:
    """How TCG runs the vCPUs of a guest of ``qemu``: one thread each only where that is safe.

    ``KBENCH_TCG_THREAD`` (``single`` or ``multi``) overrides the choice.
    """
    forced = os.environ.get(TCG_THREAD_ENV, "")
    if forced:
        if forced not in ("single", "multi"):
            raise VmTargetError(f"{TCG_THREAD_ENV}={forced!r}: expected single or multi")
        return TcgThreading(forced, f"{TCG_THREAD_ENV}={forced}")
    line = qemu_version(qemu)
    release = qemu_release(line)
    if release is None:
        return TcgThreading("single", f"qemu version not known ({line!r}): vCPUs take turns in one thread")
    if release < MTTCG_FIXED_IN:
        return TcgThreading(
            "single",
            f"qemu {release[0]}.{release[1]} is older than {MTTCG_FIXED_IN[0]}.{MTTCG_FIXED_IN[1]}: "
            "its multi-threaded TCG can run kernel code after another vCPU rewrote it, so the vCPUs "
            "take turns in one thread",
        )
    return TcgThreading("multi", f"qemu {release[0]}.{release[1]}: one thread per vCPU")


def host_key(qemu: str) -> str:
    return f"{platform.release()} | {qemu_version(qemu)}"


def _memory_file(cache_dir: Path) -> Path:
    return cache_dir / "accel.json"


def remembered(cache_dir: Path, qemu: str) -> dict[str, Any] | None:
    try:
        data = json.loads(_memory_file(cache_dir).read_text())
    except (OSError, ValueError):
        return None
    memo: dict[str, Any] | None = data.get(host_key(qemu))
    return memo


def remember(cache_dir: Path, qemu: str, kvm_works: bool, detail: str) -> None:
    path = _memory_file(cache_dir)
    with locked(path.with_suffix(".lock")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        data[host_key(qemu)] = {
            "kvm_works": kvm_works,
            "detail": detail,
            "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(data, indent=2) + "\n")
        tmp.rename(path)


def choose(requested: str, cache_dir: Path, qemu: str) -> AccelChoice:
    """Resolve ``requested`` ("auto", "kvm" or "tcg") to an accelerator."""
    if requested == "tcg":
        return AccelChoice("tcg", "requested")
    if requested == "kvm":
        return AccelChoice("kvm", "requested")
    if requested != "auto":
        raise ValueError(f"accel must be auto, kvm or tcg, not {requested!r}")
    usable, why = kvm_device_usable()
    if not usable:
        return AccelChoice("tcg", f"KVM unavailable: {why}")
    memo = remembered(cache_dir, qemu)
    if memo is None:
        return AccelChoice("kvm", "trying KVM for the first time on this host and qemu", needs_probe=True)
    if memo.get("kvm_works"):
        return AccelChoice("kvm", f"KVM booted a guest here before ({memo.get('when')})")
    return AccelChoice("tcg", f"KVM did not boot a guest here ({memo.get('detail')}, {memo.get('when')})")
