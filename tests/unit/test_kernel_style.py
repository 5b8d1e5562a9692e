"""kbench.ko's C (and the module `kbench kmod new` writes) passes the kernel's checkpatch."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from kbench.kmodtools.scaffold import scaffold_module
from kbench.targets.vm import default_cache_dir

REPO = Path(__file__).resolve().parents[2]
SOURCE_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")
CHECKPATCH_FILES = ("scripts/checkpatch.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch")


@pytest.fixture(scope="module")
def checkpatch() -> Path:
    """scripts/checkpatch.pl from Debian's linux-source-6.1 (installed by scripts/install-deps.sh)."""
    target = default_cache_dir() / "checkpatch-6.1"
    script = target / "scripts" / "checkpatch.pl"
    if not script.exists():
        assert SOURCE_TARBALL.exists(), "install linux-source-6.1 (scripts/install-deps.sh does)"
        with tarfile.open(SOURCE_TARBALL) as tar:
            prefix = tar.next().name.split("/")[0]  # type: ignore[union-attr]
            wanted = {f"{prefix}/{name}": name for name in CHECKPATCH_FILES}
            for member in tar:
                if member.name in wanted:
                    member.name = wanted[member.name]
                    tar.extract(member, target, filter="data")
                    del wanted[f"{prefix}/{member.name}"]
                    if not wanted:
                        break
        assert script.exists()
    return script


def _checkpatch(script: Path, files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["perl", str(script), "--no-tree", "--terse", "--show-types", "-f", *map(str, files)],
        capture_output=True, text=True,
    )


def test_kbench_ko_sources_are_checkpatch_clean(checkpatch: Path) -> None:
    files = sorted((REPO / "kmod").rglob("*.[ch]"))
    files = [f for f in files if not f.name.endswith(".mod.c")]
    assert len(files) >= 15
    result = _checkpatch(checkpatch, files)
    problems = [line for line in result.stdout.splitlines() if ": ERROR:" in line or ": WARNING:" in line]
    assert problems == [], "\n".join(problems)


def test_checkpatch_does_flag_bad_style(checkpatch: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.c"
    bad.write_text("int f(int x){\n    return x;\n}\n")
    result = _checkpatch(checkpatch, [bad])
    assert "ERROR" in result.stdout or "WARNING" in result.stdout


def test_scaffolded_module_is_checkpatch_clean(checkpatch: Path, tmp_path: Path) -> None:
    source = scaffold_module("mybench", tmp_path)
    result = _checkpatch(checkpatch, [source])
    problems = [line for line in result.stdout.splitlines() if ": ERROR:" in line or ": WARNING:" in line]
    assert problems == [], "\n".join(problems)
