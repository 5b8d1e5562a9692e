"""What a run stores about its kernel besides the release: the ``.config`` (its text, stored
once per digest) and, for a kernel kbench built, the tree, revision and commit."""

from __future__ import annotations

import contextlib
import gzip
from pathlib import Path
from typing import Any

from kbench.contract.kernel_config import CONFIG_LIMIT, config_digest
from kbench.targets.vm.kernel import KernelImage


def kernel_config_text(path: Path | None) -> str | None:
    """The config file at ``path`` (plain or gzip-compressed), or None when there is none to read."""
    if path is None:
        return None
    with contextlib.suppress(OSError, EOFError, UnicodeDecodeError, gzip.BadGzipFile):
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        if len(raw) <= CONFIG_LIMIT:
            return raw.decode("utf-8")
    return None


def local_kernel_config(release: str) -> str | None:
    """This machine's running kernel's config: /boot/config-RELEASE, else /proc/config.gz."""
    for path in (Path("/boot") / f"config-{release}", Path("/proc/config.gz")):
        text = kernel_config_text(path) if path.is_file() else None
        if text is not None:
            return text
    return None


def kernel_identity(kernel: KernelImage | None, config: str | None) -> dict[str, Any]:
    """``details["kernel"]`` of a target: the config's digest (None when unknown), where the
    kernel came from and, for one kbench built, its tree, revision, commit and tree id."""
    identity: dict[str, Any] = {"config_digest": config_digest(config) if config is not None else None}
    if kernel is not None:
        identity["source"] = kernel.source
        identity.update(kernel.built_from or {})
    return identity
