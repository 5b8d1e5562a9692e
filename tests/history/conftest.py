"""History tests need Apache Otava: `make install` adds it (pip install --no-deps apache-otava).

Without it the tests here are skipped with that hint, except on CI (CI=true), where a
missing library is a failure, not a skip."""

from __future__ import annotations

import importlib.util
import os

import pytest

OTAVA_HINT = "apache-otava is not installed: `make install` (pip install --no-deps 'apache-otava>=0.8')"


@pytest.fixture(autouse=True)
def needs_otava() -> None:
    if importlib.util.find_spec("otava") is not None:
        return
    if os.environ.get("CI"):
        pytest.fail(OTAVA_HINT)
    pytest.skip(OTAVA_HINT)
