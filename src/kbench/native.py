"""Locate kbench's native executables (kbench-probe, kbench-agent)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from kbench import exit_codes
from kbench.exit_codes import KbenchError


class NativeToolMissing(KbenchError, RuntimeError):
    """A native executable that ships with kbench cannot be found."""

    exit_code = exit_codes.MEASUREMENT_FAILED


def find_native(name: str) -> Path:
    """Return the path of a native kbench executable.

    Looked up, in order: the environment variable ``KBENCH_<NAME>`` (``-`` becomes
    ``_``, upper case, e.g. ``KBENCH_PROBE`` for ``kbench-probe``), the directory of
    the running interpreter (a virtualenv's ``bin``), then ``PATH``.
    """
    env_name = name.upper().replace("-", "_")
    if not env_name.startswith("KBENCH_"):
        env_name = "KBENCH_" + env_name
    override = os.environ.get(env_name)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise NativeToolMissing(f"{env_name}={override} is not an executable file")
        return path
    beside_python = Path(sys.executable).parent / name
    if beside_python.is_file() and os.access(beside_python, os.X_OK):
        return beside_python
    found = shutil.which(name)
    if found:
        return Path(found)
    raise NativeToolMissing(
        f"{name} not found: install kbench with `make setup` (it builds the native tools) "
        f"or set {env_name}"
    )
