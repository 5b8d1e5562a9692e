"""Choose the accelerator: KVM when it really works on this host, else TCG.

``/dev/kvm`` may exist yet a guest never boots (nested virtualisation): the first
session with ``accel="auto"`` makes a bounded KVM attempt and the outcome is
remembered in ``cache_dir/accel.json``, keyed by host kernel and qemu version, so
later sessions go straight to the right accelerator.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbench import children

from .cache import locked


@dataclass(frozen=True)
class AccelChoice:
    accel: str  # "kvm" | "tcg"
    reason: str
    needs_probe: bool = False  # "kvm" chosen, but never tried on this host+qemu


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
