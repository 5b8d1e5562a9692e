"""A built kernel's kit for out-of-tree modules (kbench.ko, a user's benchmark modules): the
source tree's headers, arch Makefiles and scripts, with the build directory's config,
generated headers, host tools and Module.symvers laid over them, as a distribution's
headers package holds them. It belongs to one built kernel, so that modules for it still
build after kbench's build directory moved on to another revision."""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

FROM_SOURCE = ("Makefile", "arch/x86/Makefile*", "arch/x86/include", "include", "scripts")
FROM_BUILD = (".config", "Module.symvers", "System.map", "include", "arch/x86/include/generated", "scripts",
              "tools/objtool/objtool")
_NOT_NEEDED = shutil.ignore_patterns("*.o", ".*.cmd", "*.d", ".tmp_*")


def make_kit(source: Path, build_dir: Path, kit: Path) -> Path:
    """Assemble the kit at ``kit`` (which must not exist yet); returns it."""
    kit.mkdir(parents=True)
    for root, parts in ((source, FROM_SOURCE), (build_dir, FROM_BUILD)):
        for part in parts:
            for found in sorted(glob.glob(str(root / part))):
                path = Path(found)
                target = kit / path.relative_to(root)
                if path.is_dir() and not path.is_symlink():
                    shutil.copytree(path, target, symlinks=True, dirs_exist_ok=True, ignore=_NOT_NEEDED)
                elif path.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, target, follow_symlinks=False)
    return kit
