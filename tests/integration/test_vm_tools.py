"""kbench.targets.vm.tools: the host's suite tools and their libraries as an extra cpio.

Real binaries (hackbench, busybox-static), the real ``ldd`` and the real ``cpio`` tool to
read the archives back; no guest (tests/vm/test_suites_vm.py boots one).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kbench.targets.vm import InitramfsError, ToolNotOnHost, build_tools_cpio, combine_initramfs
from kbench.targets.vm.tools import shared_libraries, tool_files


def need(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        pytest.skip(f"{tool} is not installed (scripts/install-deps.sh installs it)")
    return found


def unpack(archive: Path, into: Path) -> list[str]:
    """The archive's names, as GNU cpio lists them, after extracting it into ``into``."""
    into.mkdir()
    with open(archive, "rb") as f:
        subprocess.run(["cpio", "-idm", "--quiet", "--no-absolute-filenames"], stdin=f, cwd=into, check=True)
    with open(archive, "rb") as f:
        listing = subprocess.run(["cpio", "-it", "--quiet"], stdin=f, capture_output=True, text=True, check=True)
    return listing.stdout.split()


def test_shared_libraries_are_what_ldd_resolves() -> None:
    hackbench = Path(need("hackbench"))
    libs = shared_libraries(hackbench)
    names = {Path(lib).name for lib in libs}
    assert "libc.so.6" in names
    assert any(name.startswith("ld-linux") for name in names)  # the dynamic loader, at its PT_INTERP path
    assert all(Path(lib).is_absolute() and Path(lib).exists() for lib in libs)
    assert not any("vdso" in lib for lib in libs)
    assert len(libs) == len(set(libs))


def test_a_static_binary_needs_no_library() -> None:
    busybox = need("busybox")
    assert shared_libraries(Path(busybox)) == []


def test_archive_holds_the_tool_and_its_libraries_byte_for_byte(tmp_path: Path) -> None:
    need("hackbench")
    archive = build_tools_cpio(["hackbench"], tmp_path / "cache")
    names = unpack(archive, tmp_path / "root")
    files = tool_files(["hackbench"])
    in_archive = {"/" + name for name in names if (tmp_path / "root" / name).is_file()}
    assert in_archive == set(files) | {"/etc/nsswitch.conf", "/etc/hosts", "/etc/protocols"}
    assert "usr/bin/hackbench" in names
    for guest, host in files.items():
        copy = tmp_path / "root" / guest.lstrip("/")
        assert copy.read_bytes() == host.read_bytes(), guest
        assert os.access(copy, os.X_OK)
    # every parent directory comes before what it holds (the kernel's unpacker needs them)
    seen: set[str] = set()
    for name in names:
        parent = name.rsplit("/", 1)[0] if "/" in name else ""
        assert not parent or parent in seen, name
        seen.add(name)


def test_cached_by_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    host_hackbench = need("hackbench")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    tool = bindir / "hackbench"
    shutil.copy2(host_hackbench, tool)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    cache = tmp_path / "cache"
    first = build_tools_cpio(["hackbench"], cache)
    stamp = first.stat().st_mtime_ns
    assert build_tools_cpio(["hackbench", "hackbench"], cache) == first
    assert first.stat().st_mtime_ns == stamp  # not written again
    with open(tool, "ab") as f:
        f.write(b"\0")  # one more byte: another archive
    second = build_tools_cpio(["hackbench"], cache)
    assert second != first
    assert first.is_file() and second.is_file()
    assert "usr/bin/hackbench" in unpack(second, tmp_path / "root")  # on the guest's PATH, wherever the host has it


def test_missing_tool_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolNotOnHost, match="hackbench is not installed on the host") as raised:
        build_tools_cpio(["hackbench"], tmp_path / "cache")
    assert isinstance(raised.value, InitramfsError)


def test_combined_initramfs_is_the_parts_in_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a.cpio", tmp_path / "b.cpio"
    a.write_bytes(b"A" * 512)
    b.write_bytes(b"B" * 1024)
    joined = combine_initramfs([a, b], tmp_path / "cache")
    assert joined.read_bytes() == b"A" * 512 + b"B" * 1024
    assert combine_initramfs([a, b], tmp_path / "cache") == joined
    assert combine_initramfs([b, a], tmp_path / "cache") != joined
    assert combine_initramfs([a], tmp_path / "cache") == a


def test_qemu_gets_the_scratch_disk_only_when_asked(tmp_path: Path) -> None:
    from kbench.targets.vm.qemu import SCRATCH_SERIAL, QemuConfig

    base = dict(qemu="qemu-system-x86_64", kernel=tmp_path / "vmlinux", initrd=tmp_path / "initrd",
                console_log=tmp_path / "console", agent_socket=tmp_path / "sock")
    assert "-drive" not in QemuConfig(**base).argv()  # type: ignore[arg-type]
    argv = QemuConfig(**base, scratch_disk=tmp_path / "a,b.img").argv()  # type: ignore[arg-type]
    drive = argv[argv.index("-drive") + 1]
    assert drive == f"file={tmp_path}/a,,b.img,if=none,id=scratch0,format=raw"  # qemu's comma escaping
    assert argv[argv.index("-drive") + 3] == f"virtio-blk-pci,drive=scratch0,serial={SCRATCH_SERIAL}"
