"""Suite tools for the guest: host executables with their shared libraries, as an extra cpio.

The guest's base initramfs has no libc. A suite's tool (``hackbench``, ``fio``, …) is
taken from the host as it is (to ``/usr/bin`` in the guest), with every shared library ``ldd`` resolves for it and the
dynamic loader, each at the path ``ldd`` names, into a second newc archive. The kernel
unpacks concatenated cpio archives one after the other, so the base image and this one
are joined into the ``-initrd`` file (``combine_initramfs``). Both files are cached by
content in ``cache_dir/initramfs/``: ``tools-<hash>.cpio`` (hash of every guest path and
every byte of the binaries and libraries; with the few ``/etc`` files glibc's resolver
reads) and ``joined-<hash>.cpio``.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

from kbench import children
from kbench.cachefiles import Hasher, locked

from .cpio import NewcWriter
from .errors import InitramfsError

TOOLS_DIR = "initramfs"
GUEST_BIN = "/usr/bin"
ETC_FILES = {
    # glibc's resolver without NSS modules: even a numeric address with AI_CANONNAME (netperf)
    # goes through nsswitch; "files" is built into glibc >= 2.34
    "etc/nsswitch.conf": b"hosts: files\nnetworks: files\nservices: files\nprotocols: files\n",
    "etc/hosts": b"127.0.0.1 localhost kbench-vm\n::1 localhost ip6-localhost ip6-loopback\n",
    "etc/protocols": b"ip 0 IP\nicmp 1 ICMP\ntcp 6 TCP\nudp 17 UDP\nipv6-icmp 58 IPv6-ICMP\n",
}
_LDD_LINE = re.compile(r"^\s*(?:(\S+)\s+=>\s+)?(\S+)?\s*(?:\(0x[0-9a-f]+\))?\s*$")


class ToolNotOnHost(InitramfsError):
    """A suite's tool is not installed on the host, so it cannot be put into the guest."""


def find_host_tool(tool: str) -> Path:
    """The host executable ``tool`` (searched on PATH), or ToolNotOnHost."""
    found = shutil.which(tool)
    if found is None:
        raise ToolNotOnHost(f"{tool} is not installed on the host, so it cannot be copied into the guest")
    return Path(found)


def shared_libraries(binary: Path) -> list[str]:
    """Absolute paths of the shared libraries and the loader ``ldd`` resolves for ``binary``
    (empty for a static executable). A library ``ldd`` cannot find raises InitramfsError."""
    done = children.run(["ldd", str(binary)], capture_output=True, text=True, errors="replace", env={"LC_ALL": "C"})
    text = done.stdout + done.stderr
    if done.returncode != 0:
        if "not a dynamic executable" in text or "statically linked" in text:
            return []
        raise InitramfsError(f"ldd {binary} failed: {text.strip()}")
    paths: list[str] = []
    for line in done.stdout.splitlines():
        if "not found" in line:
            raise InitramfsError(f"{binary} needs a library the host lacks: {line.strip()}")
        if "statically linked" in line:
            return []
        match = _LDD_LINE.match(line)
        if match is None or match.group(2) is None or not match.group(2).startswith("/"):
            continue  # linux-vdso.so.1 lives in the kernel
        if match.group(2) not in paths:
            paths.append(match.group(2))
    return paths


def tool_files(tools: Sequence[str]) -> dict[str, Path]:
    """Guest path → host file for every tool (as ``/usr/bin/<tool>``, on the guest's PATH) and
    every library it needs (at the path ``ldd`` names)."""
    files: dict[str, Path] = {}
    for tool in tools:
        binary = find_host_tool(tool)
        files[f"{GUEST_BIN}/{tool}"] = binary.resolve()
        for lib in shared_libraries(binary):
            files[lib] = Path(lib).resolve()
    return files


def build_tools_cpio(tools: Sequence[str], cache_dir: Path) -> Path:
    """The cpio holding ``tools`` and their libraries (built once per content)."""
    files = tool_files(sorted(set(tools)))
    hasher = Hasher("kbench-tools-v1")
    for guest in sorted(files):
        hasher.add_file(guest, files[guest])
    for name, data in sorted(ETC_FILES.items()):
        hasher.add(name, data)
    out = cache_dir / TOOLS_DIR / f"tools-{hasher.hexdigest()}.cpio"
    if out.is_file():
        return out
    with locked(out.with_suffix(".lock")):
        if not out.is_file():
            _write_cpio(out, files)
    return out


def _write_cpio(out: Path, files: Mapping[str, Path]) -> None:
    names = [*files, *ETC_FILES]
    dirs = sorted({"/".join(parts[:i]) for g in names for parts in [g.strip("/").split("/")]
                   for i in range(1, len(parts))})
    tmp = out.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as f:
        writer = NewcWriter(f)
        for directory in dirs:  # the unpacker needs every parent; an existing one is kept
            writer.directory(directory)
        for guest in sorted(files):
            writer.file(guest.strip("/"), files[guest].read_bytes(), 0o755)
        for name, data in sorted(ETC_FILES.items()):
            writer.file(name, data, 0o644)
        writer.finish()
    tmp.rename(out)


def combine_initramfs(parts: Sequence[Path], cache_dir: Path) -> Path:
    """One file holding ``parts`` one after the other (the kernel unpacks each in turn)."""
    if len(parts) == 1:
        return parts[0]
    hasher = Hasher("kbench-joined-v1")
    for part in parts:  # kbench's own parts are named by their content's hash
        info = part.stat()
        hasher.add(str(part.resolve()), f"{info.st_size}:{info.st_mtime_ns}")
    out = cache_dir / TOOLS_DIR / f"joined-{hasher.hexdigest()}.cpio"
    if out.is_file():
        return out
    with locked(out.with_suffix(".lock")):
        if not out.is_file():
            tmp = out.with_suffix(f".tmp{os.getpid()}")
            with open(tmp, "wb") as f:
                for part in parts:
                    with open(part, "rb") as src:
                        shutil.copyfileobj(src, f, 1 << 20)
            tmp.rename(out)
    return out
