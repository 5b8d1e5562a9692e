"""Fixtures shared by the integration tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.native import NativeToolMissing, find_native


@pytest.fixture(scope="module")
def probe() -> Path:
    """The built kbench-probe (the tests that need it are skipped without it)."""
    try:
        return find_native("kbench-probe")
    except NativeToolMissing as e:  # pragma: no cover - depends on the install
        pytest.skip(str(e))
