"""Kernel modules of a KernelImage: find them by name, read their dependencies.

Debian's image packages ship no ``modules.dep`` (depmod runs at install time), so
dependencies are read from each module's ELF ``.modinfo`` section (``depends=``).
Compressed modules (``.ko.xz``, ``.ko.gz``, ``.ko.zst``) are decompressed on the way.
"""

from __future__ import annotations

import gzip
import lzma
import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from kbench import children

from .errors import InitramfsError

_KO_SUFFIXES = (".ko", ".ko.xz", ".ko.gz", ".ko.zst")


def module_name(path: Path | str) -> str:
    """``virtio-pci.ko.xz`` -> ``virtio_pci`` (the kernel's canonical module name)."""
    name = Path(path).name
    for suffix in _KO_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.replace("-", "_")


def read_module(path: Path) -> bytes:
    """A module's ELF bytes, decompressed if needed."""
    name = path.name
    if name.endswith(".xz"):
        return lzma.decompress(path.read_bytes())
    if name.endswith(".gz"):
        return gzip.decompress(path.read_bytes())
    if name.endswith(".zst"):
        if shutil.which("zstd") is None:
            raise InitramfsError(f"{path} is zstd-compressed and the `zstd` tool is not installed")
        return bytes(children.run(["zstd", "-dc", str(path)], capture_output=True, check=True).stdout)
    return path.read_bytes()


def modinfo(elf: bytes) -> dict[str, list[str]]:
    """The ``key=value`` pairs of an ELF64 module's ``.modinfo`` section."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2:
        raise ValueError("not an ELF64 object")
    (shoff,) = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def section(i: int) -> tuple[int, int, int]:
        base = shoff + i * shentsize
        name, _type, _flags, _addr, offset, size = struct.unpack_from("<IIQQQQ", elf, base)
        return name, offset, size

    _, str_off, str_size = section(shstrndx)
    names = elf[str_off : str_off + str_size]
    info: dict[str, list[str]] = {}
    for i in range(shnum):
        name_off, offset, size = section(i)
        end = names.index(b"\0", name_off)
        if names[name_off:end] != b".modinfo":
            continue
        for item in elf[offset : offset + size].split(b"\0"):
            if b"=" in item:
                k, v = item.decode("utf-8", "replace").split("=", 1)
                info.setdefault(k, []).append(v)
    return info


@dataclass(frozen=True)
class ModuleFile:
    name: str
    path: Path  # on the host
    relpath: str  # under lib/modules/<release>, without compression suffix (e.g. kernel/x/y.ko)
    depends: tuple[str, ...]


class ModuleTree:
    """Index of a ``lib/modules/<release>`` tree."""

    def __init__(self, modules_dir: Path) -> None:
        self.modules_dir = modules_dir
        self._paths: dict[str, Path] = {}
        for dirpath, _dirs, files in os.walk(modules_dir, followlinks=False):
            for f in files:
                if f.endswith(_KO_SUFFIXES):
                    self._paths.setdefault(module_name(f), Path(dirpath, f))
        self._builtin: set[str] = set()
        builtin = modules_dir / "modules.builtin"
        if builtin.is_file():
            self._builtin = {module_name(line.strip()) for line in builtin.read_text().splitlines() if line.strip()}
        self._cache: dict[str, ModuleFile] = {}

    def is_builtin(self, name: str) -> bool:
        return name.replace("-", "_") in self._builtin

    def get(self, name: str) -> ModuleFile:
        name = name.replace("-", "_")
        if name in self._cache:
            return self._cache[name]
        path = self._paths.get(name)
        if path is None:
            raise InitramfsError(f"kernel module {name} not found under {self.modules_dir}")
        info = modinfo(read_module(path))
        deps = tuple(d for d in ",".join(info.get("depends", [""])).split(",") if d)
        rel = str(path.relative_to(self.modules_dir))
        for suffix in (".xz", ".gz", ".zst"):
            rel = rel.removesuffix(suffix)
        mod = ModuleFile(name=name, path=path, relpath=rel, depends=tuple(d.replace("-", "_") for d in deps))
        self._cache[name] = mod
        return mod

    def closure(self, names: list[str]) -> list[ModuleFile]:
        """The named modules and their dependencies, dependencies first (load order).

        Built-in modules are skipped; an unknown name raises InitramfsError.
        """
        order: list[ModuleFile] = []
        seen: set[str] = set()

        def visit(name: str, stack: tuple[str, ...]) -> None:
            name = name.replace("-", "_")
            if name in seen:
                return
            if name in stack:
                raise InitramfsError(f"module dependency cycle: {' -> '.join((*stack, name))}")
            if self.is_builtin(name) and name not in self._paths:
                seen.add(name)
                return
            mod = self.get(name)
            for dep in mod.depends:
                visit(dep, (*stack, name))
            seen.add(name)
            order.append(mod)

        for n in names:
            visit(n, ())
        return order
