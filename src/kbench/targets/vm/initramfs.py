"""Assemble the guest's initramfs: busybox, kbench-agent, kbench-probe, virtio modules, /init.

The archive is an uncompressed newc cpio (under TCG, unpacking a gzip-compressed one
costs more boot time than it saves; see docs/VM.md), cached in
``cache_dir/initramfs/<content-hash>.cpio``.
"""

from __future__ import annotations

import os
import shutil
import stat
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbench import children
from kbench.cachefiles import Hasher, locked

from ...native import NativeToolMissing, find_native
from ...resources import ResourceMissing, find_resource
from .cpio import NewcWriter
from .errors import InitramfsError
from .kernel import KernelImage
from .kmods import ModuleTree, read_module

#: modules loaded by /init before the agent starts (dependencies are added)
BOOT_MODULES: tuple[str, ...] = ("virtio_pci", "virtio_console")

_BASE_DIRS = (
    "bin",
    "sbin",
    "usr",
    "usr/bin",
    "usr/sbin",
    "dev",
    "proc",
    "sys",
    "tmp",
    "run",
    "root",
    "etc",
    "etc/kbench",
    "lib",
    "lib/modules",
    "lib/kbench",
    "mnt",
    "var",
    "var/tmp",
)
_PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
_GROUP = "root:x:0:\nnogroup:x:65534:\n"


@dataclass(frozen=True)
class _Entry:
    kind: str  # "dir" | "file" | "symlink" | "chardev"
    perm: int = 0o755
    source: Path | None = None
    data: bytes | None = None
    target: str = ""
    rdev: tuple[int, int] = (0, 0)


def find_init_script() -> Path:
    """``vm/init`` (``$KBENCH_VM_INIT`` overrides; else ``kbench.resources.find_resource("vm")``)."""
    env = os.environ.get("KBENCH_VM_INIT")
    if env:
        if not Path(env).is_file():
            raise InitramfsError(f"KBENCH_VM_INIT={env} is not a file")
        return Path(env)
    try:
        init = find_resource("vm") / "init"
    except ResourceMissing as e:
        raise InitramfsError(str(e)) from e
    if not init.is_file():
        raise InitramfsError(f"{init} is missing (the initramfs init script)")
    return init


def find_busybox() -> Path:
    """A statically linked busybox (``$KBENCH_BUSYBOX``, else ``busybox`` on PATH)."""
    env = os.environ.get("KBENCH_BUSYBOX")
    candidates = [Path(env)] if env else [Path(p) for p in (shutil.which("busybox"), "/bin/busybox") if p]
    for c in candidates:
        if c.is_file():
            if _is_dynamic(c):
                raise InitramfsError(f"{c} is dynamically linked: install busybox-static")
            return c
    raise InitramfsError("busybox not found: install busybox-static (or set KBENCH_BUSYBOX)")


def _is_dynamic(path: Path) -> bool:
    """True if the ELF executable has a PT_INTERP program header."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return False
        (phoff,) = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return any(struct.unpack_from("<I", table, i * phentsize)[0] == 3 for i in range(phnum))


def _applets(busybox: Path) -> list[str]:
    proc = children.run([str(busybox), "--list-full"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise InitramfsError(f"`{busybox} --list-full` failed: {proc.stderr.strip()}")
    return [line.strip() for line in proc.stdout.splitlines() if line.strip()]


def _native(name: str) -> Path:
    try:
        path = find_native(name)
    except NativeToolMissing as e:
        raise InitramfsError(str(e)) from e
    if _is_dynamic(path):
        raise InitramfsError(f"{path} is dynamically linked; the guest has no libc (rebuild kbench)")
    return path


def _plan(
    kernel: KernelImage,
    files: Mapping[str, Path],
    boot_modules: Sequence[str],
    extra_modules: Sequence[str],
) -> dict[str, _Entry]:
    plan: dict[str, _Entry] = {}

    def add_dirs(path: str) -> None:
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in plan:
                plan[d] = _Entry("dir")
            elif plan[d].kind != "dir":
                raise InitramfsError(f"initramfs: {d} is both a file and a directory")

    def add(path: str, entry: _Entry) -> None:
        path = path.strip("/")
        add_dirs(path)
        plan[path] = entry

    for d in _BASE_DIRS:
        add(d, _Entry("dir", perm=0o1777 if d in ("tmp", "var/tmp") else (0o700 if d == "root" else 0o755)))
    add("dev/console", _Entry("chardev", perm=0o600, rdev=(5, 1)))
    add("dev/null", _Entry("chardev", perm=0o666, rdev=(1, 3)))
    busybox = find_busybox()
    add("bin/busybox", _Entry("file", source=busybox))
    for applet in _applets(busybox):
        applet = applet.strip("/")
        if applet != "bin/busybox":
            add(applet, _Entry("symlink", target="/bin/busybox"))
    add("bin/kbench-agent", _Entry("file", source=_native("kbench-agent")))
    add("bin/kbench-probe", _Entry("file", source=_native("kbench-probe")))
    add("init", _Entry("file", source=find_init_script()))
    add("etc/passwd", _Entry("file", perm=0o644, data=_PASSWD.encode()))
    add("etc/group", _Entry("file", perm=0o644, data=_GROUP.encode()))
    add("etc/hostname", _Entry("file", perm=0o644, data=b"kbench-vm\n"))

    load: list[str] = []
    if kernel.modules_dir is not None:
        tree = ModuleTree(kernel.modules_dir)
        boot = tree.closure([m for m in boot_modules if not tree.is_builtin(m)])
        extra = tree.closure(list(extra_modules))
        base = f"lib/modules/{kernel.release}"
        dep_lines = []
        for mod in {m.name: m for m in (*boot, *extra)}.values():
            add(f"{base}/{mod.relpath}", _Entry("file", perm=0o644, source=mod.path))
            deps = [tree.get(d).relpath for d in reversed(_dep_order(tree, mod.name))]
            dep_lines.append(f"{mod.relpath}: {' '.join(deps)}".rstrip() + "\n")
        add(f"{base}/modules.dep", _Entry("file", perm=0o644, data="".join(sorted(dep_lines)).encode()))
        for name in ("modules.builtin", "modules.order"):
            if (kernel.modules_dir / name).is_file():
                add(f"{base}/{name}", _Entry("file", perm=0o644, source=kernel.modules_dir / name))
        load = [f"/{base}/{m.relpath}" for m in boot]
    elif extra_modules:
        raise InitramfsError(f"kernel {kernel.spec} has no modules directory; cannot add {list(extra_modules)}")
    add("etc/kbench/modules", _Entry("file", perm=0o644, data="".join(f"{m}\n" for m in load).encode()))

    for guest, host in files.items():
        host = Path(host)
        if not host.is_file():
            raise InitramfsError(f"initramfs file {guest}: host file {host} does not exist")
        perm = stat.S_IMODE(host.stat().st_mode) | 0o444
        add(guest, _Entry("file", perm=perm, source=host))
    return plan


def _dep_order(tree: ModuleTree, name: str) -> list[str]:
    """Dependencies of ``name`` (not itself), dependencies first."""
    return [m.name for m in tree.closure([name]) if m.name != name]


def build_initramfs(
    kernel: KernelImage,
    files: Mapping[str, Path] | None = None,
    cache_dir: Path | None = None,
    *,
    boot_modules: Sequence[str] = BOOT_MODULES,
    extra_modules: Sequence[str] = (),
) -> Path:
    """Build (or reuse) the initramfs for ``kernel``; returns the cpio path.

    ``files`` maps guest paths (e.g. ``/lib/kbench/kbench.ko``) to host files.
    ``boot_modules`` are loaded by /init (with dependencies, resolved from the
    modules' ``.modinfo``); ``extra_modules`` are only copied (with a ``modules.dep``
    so that ``modprobe NAME`` works in the guest).
    """
    from kbench.cachefiles import default_cache_dir

    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    plan = _plan(kernel, dict(files or {}), boot_modules, extra_modules)
    h = Hasher("kbench-initramfs-v1")
    h.add("release", kernel.release)
    for path in sorted(plan):
        e = plan[path]
        h.add(path, f"{e.kind}:{e.perm:o}:{e.target}:{e.rdev}")
        if e.source is not None:
            h.add_file(path, e.source)
        elif e.data is not None:
            h.add(path, e.data)
    out = cache_dir / "initramfs" / f"{kernel.release}-{h.hexdigest()}.cpio"
    if out.is_file():
        return out
    with locked(out.with_suffix(".lock")):
        if out.is_file():
            return out
        tmp = out.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "wb") as f:
            w = NewcWriter(f)
            for path in _parents_first(plan):
                e = plan[path]
                if e.kind == "dir":
                    w.directory(path, e.perm)
                elif e.kind == "symlink":
                    w.symlink(path, e.target)
                elif e.kind == "chardev":
                    w.char_device(path, *e.rdev, perm=e.perm)
                else:
                    if e.source is None:
                        data = e.data or b""
                    elif e.source.name.endswith((".ko.xz", ".ko.gz", ".ko.zst")):
                        data = read_module(e.source)
                    else:
                        data = e.source.read_bytes()
                    w.file(path, data, e.perm)
            w.finish()
        tmp.rename(out)
    return out


def _parents_first(plan: Mapping[str, _Entry]) -> list[str]:
    # sorted() puts "a" before "a/b"; directories are created before their content
    return sorted(plan)
