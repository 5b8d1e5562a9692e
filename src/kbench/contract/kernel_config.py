"""A kernel's ``.config`` as kbench identifies it: the SHA-256 of its text (the store keeps
each config once under this digest; runs and built kernels name it)."""

from __future__ import annotations

import hashlib

CONFIG_LIMIT = 4 << 20
"""A .config larger than this is not a kernel config (Debian's are about 270 KB)."""


def config_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
