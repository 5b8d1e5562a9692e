"""``kbench-probe --list``, read once per probe binary: its output is kept in kbench's cache
directory under a key of the binary's path, size, modification time and inode, so that a
command that only reads stored runs starts no process to learn the probe's workloads.

The list is the probe's compiled-in table (native/probe/workloads.c), so it changes only
with the binary; a rebuilt or replaced binary has another key. A cache that cannot be read
or written is passed over: the probe is asked, as without a cache.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from kbench import children
from kbench.cachefiles import default_cache_dir

CACHE_SUBDIR = "probe-list"


def cache_path(probe: Path) -> Path | None:
    """The cache file of this probe binary's list, or None when the binary cannot be stat'ed."""
    try:
        st = os.stat(probe)
    except OSError:
        return None
    key = f"{os.path.abspath(probe)}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}\0{st.st_dev}"
    return default_cache_dir() / CACHE_SUBDIR / (hashlib.sha256(key.encode()).hexdigest()[:24] + ".json")


def probe_list(probe: Path) -> list[dict[str, Any]]:
    """The workloads ``probe --list`` prints (JSON entries), from the cache when it holds them."""
    path = cache_path(probe)
    if path is not None:
        with contextlib.suppress(OSError, ValueError):
            cached = json.loads(path.read_text())
            if isinstance(cached, list):
                return cached
    out = children.run([str(probe), "--list"], capture_output=True, text=True, check=True)
    entries: list[dict[str, Any]] = json.loads(out.stdout)
    if path is not None:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            partial.write_text(out.stdout)
            os.replace(partial, path)  # readers see the whole list or none
    return entries
