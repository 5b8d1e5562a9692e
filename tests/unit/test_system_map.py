"""A kernel's System.map names its functions before any boot; Debian's placeholder names none."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.trace.symbols import Kallsyms, UnknownFunction, system_map_of

RELEASE = "6.1.0-56-amd64"
DEBIAN_PLACEHOLDER = "ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n"
"""What boot/System.map-RELEASE holds in Debian's linux-image packages (checked in 6.1.0-55/56 and 6.12)."""
REAL_MAP_HEAD = (
    "0000000000000000 D __per_cpu_start\n"
    "ffffffff81000000 T _stext\n"
    "ffffffff81000000 T _text\n"
    "ffffffff81000060 T startup_64\n"
    "ffffffff81a2b3c0 T fib_table_lookup\n"
    "ffffffff81a2b9e0 t fib_table_lookup.cold\n"
    "ffffffff82600000 D jiffies\n"
)


def _boot(tmp_path: Path, system_map: str) -> Path:
    boot = tmp_path / "boot"
    boot.mkdir()
    (boot / f"vmlinuz-{RELEASE}").write_bytes(b"MZ")
    (boot / f"System.map-{RELEASE}").write_text(system_map)
    return boot / f"vmlinuz-{RELEASE}"


def test_debians_placeholder_is_no_system_map(tmp_path: Path) -> None:
    assert system_map_of(_boot(tmp_path, DEBIAN_PLACEHOLDER), RELEASE, None) is None


def test_a_map_that_lists_code_is_read_and_refuses_unknown_functions(tmp_path: Path) -> None:
    vmlinuz = _boot(tmp_path, REAL_MAP_HEAD)
    found = system_map_of(vmlinuz, RELEASE, None)
    assert found == vmlinuz.parent / f"System.map-{RELEASE}"
    symbols = Kallsyms.parse(found.read_text(), source=f"{found.name} (checked before booting)")
    symbols.check("fib_table_lookup")
    with pytest.raises(UnknownFunction, match=r"no function fib_table_lookupp in this kernel's System.map-"
                                              r"6\.1\.0-56-amd64 \(checked before booting\); near matches: "
                                              r"fib_table_lookup"):
        symbols.check("fib_table_lookupp")
    with pytest.raises(UnknownFunction, match="jiffies is not a function"):
        symbols.check("jiffies")


def test_a_build_trees_map_is_used_when_the_image_has_none(tmp_path: Path) -> None:
    vmlinuz = tmp_path / "arch" / "x86" / "boot" / "bzImage"
    vmlinuz.parent.mkdir(parents=True)
    vmlinuz.write_bytes(b"MZ")
    (tmp_path / "System.map").write_text(REAL_MAP_HEAD)
    assert system_map_of(vmlinuz, RELEASE, tmp_path) == tmp_path / "System.map"
    (tmp_path / "System.map").write_text(DEBIAN_PLACEHOLDER)
    assert system_map_of(vmlinuz, RELEASE, tmp_path) is None
