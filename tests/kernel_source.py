"""Debian's linux-source-6.1 (scripts/install-deps.sh installs it for the tests): single files
taken out of its tarball, as references for what kbench does like the kernel's own scripts."""

from __future__ import annotations

import tarfile
from pathlib import Path

from kbench.cachefiles import default_cache_dir, locked

SOURCE_TARBALL = Path("/usr/src/linux-source-6.1.tar.xz")


def kernel_source_files(*names: str) -> Path:
    """A directory holding ``names`` (paths inside the tree, e.g. ``scripts/diffconfig``), taken
    from the tarball once and kept in kbench's cache directory."""
    target = default_cache_dir() / "linux-source-6.1-files"
    with locked(target.with_name(target.name + ".lock")):
        wanted = {name for name in names if not (target / name).exists()}
        if wanted:
            assert SOURCE_TARBALL.exists(), "install linux-source-6.1 (scripts/install-deps.sh --test does)"
            with tarfile.open(SOURCE_TARBALL) as tar:
                for member in tar:
                    inside = member.name.partition("/")[2]
                    if inside in wanted:
                        member.name = inside
                        tar.extract(member, target, filter="data")
                        wanted.discard(inside)
                        if not wanted:
                            break
            assert not wanted, f"not in {SOURCE_TARBALL}: {sorted(wanted)}"
    return target
